"""POST /v1/messages and /v1/messages/count_tokens through the official anthropic SDK (SPEC §16), on
every provider kind: `anthropic` relayed byte for byte, `openai`, `gemini` and `mistral` (litellm's
long tail) translated, all on the fake provider over real sockets."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import orjson
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes import anthropic_wire
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import add_credential, provider_base, records_of_model, unique_model
from tests.support.gateway import Gateway, User
from tests.support.sdks import anthropic_client

KINDS = ("anthropic", "openai", "gemini", "mistral")
HI = [{"role": "user", "content": "hi"}]
WEATHER = {
    "name": "get_weather",
    "description": "The weather at a place",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}},
}
# The id each kind's fake answers a tool call with; Gemini has none of its own (the adapter makes one).
CALL_IDS = {"anthropic": "toolu_fake_1", "openai": "call_fake_1", "mistral": "call_fake_1"}


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    config = default_test_config(fake_provider.base_url)
    config["models"].append({"provider": "mistral", "model": "mistral-small-latest"})
    return make_gateway(config)


def base_url(fake_provider: FakeProvider, kind: str) -> str:
    return f"{fake_provider.base_url}/v1" if kind == "mistral" else provider_base(fake_provider, kind)


@pytest.fixture(scope="module")
def user(gateway: Gateway, fake_provider: FakeProvider) -> User:
    """One caller with a credential of every kind (each test uses its own model names)."""
    made = gateway.user()
    for kind in KINDS:
        add_credential(made, kind, base_url(fake_provider, kind))
    return made


@pytest.fixture
def client(gateway: Gateway, user: User) -> Iterator[anthropic.Anthropic]:
    # The gateway token in x-api-key, as Claude Code and the SDK send an Anthropic key.
    sdk = anthropic_client(gateway, user)
    yield sdk
    sdk.close()


def sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) for each event of an SSE body; asserts every event names its data's type."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = orjson.loads(lines["data"])
        assert lines["event"] == data["type"]
        events.append((lines["event"], data))
    return events


@pytest.mark.parametrize("kind", KINDS)
def test_a_message_answers_in_anthropics_shape_and_is_metered_as_messages(
    kind: str, client: anthropic.Anthropic, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    fake_provider.script(model, reply="Bonjour.", prompt_tokens=21, completion_tokens=3)
    raw = client.messages.with_raw_response.create(
        model=f"{kind}/{model}", max_tokens=64, system="Be brief.", messages=HI
    )
    message = raw.parse()
    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [("text", "Bonjour.")]
    assert message.stop_reason == "end_turn" and message.role == "assistant"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (21, 3)
    assert raw.headers["x-switchboard-model"] == f"{kind}/{model}"
    [seen] = fake_provider.received(model)
    assert seen.api_key not in (None, user.token)  # the caller's own key never reaches the provider
    [record] = records_of_model(user, model)
    assert (record["endpoint"], record["status"], record["provider"]) == ("messages", "ok", kind)
    assert (record["prompt_tokens"], record["completion_tokens"]) == (21, 3)


def test_an_anthropic_credential_gets_the_request_byte_for_byte_with_the_clients_headers(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("relay")
    body = {
        "model": f"anthropic/{model}",
        "max_tokens": 50,
        "system": [{"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}}],
        "messages": HI,
        "top_k": 5,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "metadata": {"user_id": "u-7"},
    }
    fake_provider.script(model, answer=anthropic_wire.message([anthropic_wire.text("verbatim")]))
    response = httpx.post(
        f"{gateway.url}/v1/messages",
        json=body,
        headers={"x-api-key": user.token, "anthropic-version": "2023-06-01", "anthropic-beta": "b-1,b-2"},
    )
    assert response.status_code == 200, response.text
    [seen] = fake_provider.received(model)
    assert seen.body == {**body, "model": model}
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["anthropic-beta"] == "b-1,b-2"
    assert seen.path == "/v1/messages"
    assert response.content == seen.sent[0]  # the provider's answer as it came


def test_an_anthropic_stream_is_relayed_as_it_came(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("relay-stream")
    fake_provider.script(
        model, answer_events=anthropic_wire.stream_of(anthropic_wire.message([anthropic_wire.text("as is")]))
    )
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/messages",
        json={"model": f"anthropic/{model}", "max_tokens": 50, "messages": HI, "stream": True},
        headers={"authorization": f"Bearer {user.token}"},
    ) as response:
        raw = response.read()
    [seen] = fake_provider.received(model)
    assert raw == b"".join(seen.sent)
    assert records_of_model(user, model)[0]["completion_tokens"] == 12


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_follows_anthropics_event_grammar_and_accumulates_in_the_sdk(
    kind: str, gateway: Gateway, client: anthropic.Anthropic, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    fake_provider.script(model, reply="one two three", prompt_tokens=9, completion_tokens=4)
    with client.messages.stream(model=f"{kind}/{model}", max_tokens=64, messages=HI) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "one two three"
    assert final.stop_reason == "end_turn"
    if kind != "mistral":  # litellm counts a mistral stream itself, rather than asking for its usage
        assert (final.usage.input_tokens, final.usage.output_tokens) == (9, 4)
    [record] = records_of_model(user, model)
    assert (record["endpoint"], record["status"], record["stream"]) == ("messages", "ok", True)
    # The wire itself: message_start first, message_delta then message_stop last, no [DONE].
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/messages",
        json={"model": f"{kind}/{model}", "max_tokens": 64, "messages": HI, "stream": True},
        headers={"x-api-key": user.token},
    ) as response:
        raw = response.read()
    assert b"[DONE]" not in raw
    names = [name for name, _ in sse_events(raw) if name != "ping"]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names[1] == "content_block_start" and names[-3] == "content_block_stop"
    assert set(names[2:-3]) == {"content_block_delta"}


@pytest.mark.parametrize("kind", KINDS)
def test_tools_round_trip_with_their_ids_and_tool_choice_any(
    kind: str, client: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    message = client.messages.create(
        model=f"{kind}/{model}",
        max_tokens=64,
        messages=[{"role": "user", "content": "weather in Paris?"}],
        tools=[WEATHER],  # type: ignore[list-item]
        tool_choice={"type": "any"},
    )
    [call] = [block for block in message.content if block.type == "tool_use"]
    assert (call.name, call.input, message.stop_reason) == ("get_weather", {"location": "Paris"}, "tool_use")
    if kind in CALL_IDS:
        assert call.id == CALL_IDS[kind]
    [first] = fake_provider.received(model)
    if kind in ("openai", "mistral"):  # Mistral's own word for OpenAI's `required` is `any` (litellm)
        assert first.body["tool_choice"] == ("required" if kind == "openai" else "any")
        assert first.body["tools"][0]["function"]["parameters"] == WEATHER["input_schema"]
    # The answer goes back as a tool_result, under the same id.
    client.messages.create(
        model=f"{kind}/{model}",
        max_tokens=64,
        messages=[
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": [call.model_dump(exclude_none=True)]},  # type: ignore[list-item]
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}],
            },
        ],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    second = fake_provider.received(model)[1].body
    if kind in ("openai", "mistral"):
        assert second["messages"][1]["tool_calls"][0]["id"] == call.id
        assert second["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": "sunny"}
    elif kind == "anthropic":
        assert second["messages"][2]["content"][0]["tool_use_id"] == call.id


@pytest.mark.parametrize("kind", KINDS)
def test_a_streamed_tool_call_accumulates_its_input(
    kind: str, client: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    with client.messages.stream(
        model=f"{kind}/{model}",
        max_tokens=64,
        messages=HI,
        tools=[WEATHER],  # type: ignore[list-item]
    ) as stream:
        final = stream.get_final_message()
    [call] = [block for block in final.content if block.type == "tool_use"]
    assert (call.name, call.input, final.stop_reason) == ("get_weather", {"location": "Paris"}, "tool_use")


@pytest.mark.parametrize("kind", KINDS)
def test_count_tokens_is_relayed_to_anthropic_and_counted_here_otherwise_without_a_record(
    kind: str, client: anthropic.Anthropic, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    fake_provider.script(model, prompt_tokens=42)
    counted = client.messages.count_tokens(
        model=f"{kind}/{model}", system="Be brief.", messages=[{"role": "user", "content": "hello " * 40}]
    )
    seen = fake_provider.received(model)
    if kind == "anthropic":
        assert counted.input_tokens == 42
        assert [r.path for r in seen] == ["/v1/messages/count_tokens"]
        assert "max_tokens" not in seen[0].body
    else:
        assert 40 <= counted.input_tokens <= 60  # "hello " is one token, plus the system and framing
        assert seen == []  # no provider is asked
    assert records_of_model(user, model, count=0) == []  # a count is no completion: nothing is metered


def test_errors_are_anthropics_typed_errors(
    gateway: Gateway, client: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    with pytest.raises(anthropic.AuthenticationError) as bad_key:
        anthropic.Anthropic(base_url=gateway.url, api_key="svc_api_nope", max_retries=0).messages.create(
            model="openai/gpt-4o-mini", max_tokens=5, messages=HI
        )
    assert bad_key.value.body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": bad_key.value.body["error"]["message"]},
    }  # type: ignore[index]
    with pytest.raises(anthropic.NotFoundError) as unknown:
        client.messages.create(model="no-such-model", max_tokens=5, messages=HI)
    assert unknown.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError) as malformed:
        client.messages.create(model="openai/gpt-4o-mini", max_tokens=5, messages=[])
    assert malformed.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    viewer = gateway.user(role="Viewer")
    with pytest.raises(anthropic.PermissionDeniedError) as denied:
        anthropic.Anthropic(base_url=gateway.url, api_key=viewer.token, max_retries=0).messages.create(
            model="openai/gpt-4o-mini", max_tokens=5, messages=HI
        )
    assert denied.value.body["error"]["type"] == "permission_error"  # type: ignore[index]
    no_keys = gateway.user()
    with pytest.raises(anthropic.BadRequestError) as no_credential:
        anthropic.Anthropic(base_url=gateway.url, auth_token=no_keys.token, max_retries=0).messages.create(
            model="openai/gpt-4o-mini", max_tokens=5, messages=HI
        )
    assert no_credential.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


def test_a_malformed_body_and_an_unknown_route_answer_in_anthropics_shape(
    gateway: Gateway, user: User
) -> None:
    headers = {"x-api-key": user.token}
    response = httpx.post(f"{gateway.url}/v1/messages", content=b"{not json", headers=headers)
    assert response.status_code == 400
    assert response.json()["type"] == "error" and response.json()["error"]["type"] == "invalid_request_error"
    missing = httpx.post(
        f"{gateway.url}/v1/messages", json={"model": "fast", "messages": HI}, headers=headers
    )
    assert missing.status_code == 400 and "max_tokens" in missing.json()["error"]["message"]
    response = httpx.post(f"{gateway.url}/v1/messages/batches", json={}, headers=headers)
    assert response.status_code == 404 and response.json()["error"]["type"] == "not_found_error"


@pytest.mark.parametrize("kind", KINDS)
def test_a_provider_429_is_a_rate_limit_error_with_retry_after(
    kind: str, client: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    fake_provider.script(model, fail="rate_limit", retry_after="7")
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model=f"{kind}/{model}", max_tokens=5, messages=HI)
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_rejected_stored_key_is_424(
    kind: str, client: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    fake_provider.script(model, fail="unauthorized")
    with pytest.raises(anthropic.APIStatusError) as rejected:
        client.messages.create(model=f"{kind}/{model}", max_tokens=5, messages=HI)
    assert rejected.value.status_code == 424


def test_the_gateways_own_limits_answer_in_anthropics_shape(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    admin = gateway.user(role="Admin")
    caller = gateway.user()
    add_credential(caller, "openai", provider_base(fake_provider, "openai"))
    sdk = anthropic.Anthropic(base_url=gateway.url, api_key=caller.token, max_retries=0)
    limit = {"subject_type": "user", "subject_id": str(caller.id), "metric": "requests", "window": "hour"}
    assert admin.client.post("/limits", json={**limit, "amount": "1"}).status_code == 201
    sdk.messages.create(model="openai/gpt-4o-mini", max_tokens=5, messages=HI)
    with pytest.raises(anthropic.RateLimitError) as limited:
        sdk.messages.create(model="openai/gpt-4o-mini", max_tokens=5, messages=HI)
    assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert int(limited.value.response.headers["retry-after"]) >= 1
    assert limited.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    budget = {**limit, "metric": "cost", "window": "month", "amount": "0"}
    spender = gateway.user()
    add_credential(spender, "openai", provider_base(fake_provider, "openai"))
    assert admin.client.post("/limits", json={**budget, "subject_id": str(spender.id)}).status_code == 201
    with pytest.raises(anthropic.APIStatusError) as broke:
        anthropic.Anthropic(base_url=gateway.url, api_key=spender.token, max_retries=0).messages.create(
            model="openai/gpt-4o-mini", max_tokens=5, messages=HI
        )
    assert broke.value.status_code == 402
    assert broke.value.body["error"]["type"] == "billing_error"  # type: ignore[index]


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_an_idempotent_retry_replays_the_stream_without_a_second_call(
    kind: str, gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    body = {"model": f"{kind}/{model}", "max_tokens": 20, "messages": HI, "stream": True}
    headers = {"x-api-key": user.token, "idempotency-key": uuid.uuid4().hex}
    first = httpx.post(f"{gateway.url}/v1/messages", json=body, headers=headers)
    again = httpx.post(f"{gateway.url}/v1/messages", json=body, headers=headers)
    assert first.content == again.content and again.headers["idempotent-replayed"] == "true"
    assert first.content.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert len(fake_provider.received(model)) == 1
    assert len(records_of_model(user, model)) == 1


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_client_leaving_mid_stream_cancels_the_provider_call(
    kind: str, gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model(kind)
    fake_provider.script(model, endless=True)
    body = {"model": f"{kind}/{model}", "max_tokens": 20, "messages": HI, "stream": True}
    with httpx.stream(
        "POST", f"{gateway.url}/v1/messages", json=body, headers={"x-api-key": user.token}
    ) as response:
        next(response.iter_bytes())
    assert fake_provider.wait_disconnect_sync(model, timeout=5) is not None
    [record] = records_of_model(user, model)
    assert record["status"] == "cancelled"


def test_a_translated_stream_that_breaks_off_ends_with_an_anthropic_error_event(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("break")
    fake_provider.script(model, reply="a b c d e f", break_after=3)
    body = {"model": f"openai/{model}", "max_tokens": 20, "messages": HI, "stream": True}
    with httpx.stream(
        "POST", f"{gateway.url}/v1/messages", json=body, headers={"x-api-key": user.token}
    ) as response:
        raw = response.read()
    name, data = sse_events(raw)[-1]
    assert name == "error" and data["error"]["type"] == "api_error"
    assert b"message_stop" not in raw


def test_a_cap_above_what_the_translated_model_can_give_is_lowered_to_its_maximum(
    client: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    """Claude Code asks for 32,000 tokens; gpt-4o-mini gives at most 16,384 (litellm's map) and its
    API refuses more, so the translated request asks for that much."""
    client.messages.create(model="openai/gpt-4o-mini", max_tokens=32_000, messages=HI)
    client.messages.create(model="openai/gpt-4o-mini", max_tokens=100, messages=HI)
    asked = [r.body["max_completion_tokens"] for r in fake_provider.received("gpt-4o-mini")[-2:]]
    assert asked == [16_384, 100]
