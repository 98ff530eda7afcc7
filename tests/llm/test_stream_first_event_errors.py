"""A provider's error event as the very first event of a byte-relayed stream (SPEC §14, §5, §16):
nothing has reached the client, so the call moves on to its next route as it would on an HTTP error
(one record per attempt), and with no route left the client gets the mapped HTTP status in the
surface's own error shape, not a 200 stream that fails. OpenAI's `data: {"error": …}` chunk and
OpenRouter's error chunk on /v1/chat/completions, Anthropic's `event: error` on /v1/messages, a
Responses `error` event on /v1/responses; a `ping` before the error has begun the stream."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes import anthropic_wire, openai_wire, responses_wire
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import (
    credentialed_user,
    records_of_model,
    unique_model,
)
from tests.support.gateway import Gateway, User
from tests.support.sdks import anthropic_client, openai_client

HI = [{"role": "user", "content": "hi"}]
SPARE_REPLY = "From the spare."
RATE_LIMIT = "Rate limit reached for requests"
OPENAI_LIMITED = openai_wire.stream_error(RATE_LIMIT, "requests", "rate_limit_exceeded")
# OpenRouter keeps the connection alive with comments, then fails in an ordinary chunk.
OPENROUTER_LIMITED = b": OPENROUTER PROCESSING\n\n" + openai_wire.openrouter_stream_error(
    "gen-1", "openai/gpt-4o", 429, RATE_LIMIT
)
ANTHROPIC_LIMITED = anthropic_wire.error_event("rate_limit_error", RATE_LIMIT)
RESPONSES_LIMITED = responses_wire.error_event(0, "rate_limit_exceeded", RATE_LIMIT)


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    return make_gateway(default_test_config(fake_provider.base_url))


@pytest.fixture(scope="module")
def user(gateway: Gateway, fake_provider: FakeProvider) -> User:
    return credentialed_user(gateway, fake_provider, ("openai", "anthropic"))


def openai_sdk(gateway: Gateway, user: User) -> openai.OpenAI:
    return openai_client(gateway, user)


def anthropic_sdk(gateway: Gateway, user: User) -> anthropic.Anthropic:
    return anthropic_client(gateway, user)


def check_moved_on(user: User, broken: str, spare: str, endpoint: str) -> None:
    [failed] = records_of_model(user, broken)
    [ok] = records_of_model(user, spare)
    assert (failed["status"], failed["error_code"], failed["attempt"]) == ("error", "RATE_LIMITED", 1)
    assert (failed["prompt_tokens"], failed["completion_tokens"], failed["cost"]) == (0, 0, "0")
    assert (ok["status"], ok["attempt"], ok["endpoint"], ok["stream"]) == ("ok", 2, endpoint, True)
    assert failed["request_id"] == ok["request_id"] and failed["endpoint"] == endpoint


@pytest.mark.parametrize("error", [OPENAI_LIMITED, OPENROUTER_LIMITED], ids=["openai", "openrouter"])
def test_a_chat_stream_that_fails_in_its_first_event_moves_on_to_the_next_model(
    error: bytes, gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    broken, spare = unique_model("broken-first"), unique_model("spare")
    fake_provider.script(broken, answer_events=[error])
    fake_provider.script(spare, reply=SPARE_REPLY)
    client = openai_sdk(gateway, user)
    raw = client.chat.completions.with_raw_response.create(
        model=f"openai/{broken}",
        messages=HI,  # type: ignore[arg-type]
        stream=True,
        extra_body={"models": [f"openai/{broken}", f"anthropic/{spare}"]},
    )
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert raw.headers["x-switchboard-model"] == f"anthropic/{spare}"
    chunks = list(raw.parse())
    client.close()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == SPARE_REPLY
    check_moved_on(user, broken, spare, "chat.completions")


def test_a_messages_stream_that_fails_in_its_first_event_moves_on_to_the_next_model(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    broken, spare = unique_model("broken-first"), unique_model("spare")
    fake_provider.script(broken, answer_events=[ANTHROPIC_LIMITED])
    fake_provider.script(spare, reply=SPARE_REPLY)
    client = anthropic_sdk(gateway, user)
    raw = client.messages.with_raw_response.create(
        model=f"anthropic/{broken}",
        max_tokens=20,
        messages=HI,  # type: ignore[arg-type]
        stream=True,
        extra_body={"models": [f"anthropic/{broken}", f"openai/{spare}"]},
    )
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert raw.headers["x-switchboard-model"] == f"openai/{spare}"
    events = list(raw.parse())
    client.close()
    text = "".join(
        e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    assert text == SPARE_REPLY and events[-1].type == "message_stop"
    check_moved_on(user, broken, spare, "messages")


def test_a_responses_stream_that_fails_in_its_first_event_moves_on_to_the_next_model(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    broken, spare = unique_model("broken-first"), unique_model("spare")
    fake_provider.script(broken, answer_events=[RESPONSES_LIMITED])
    fake_provider.script(spare, reply=SPARE_REPLY)
    client = openai_sdk(gateway, user)
    raw = client.responses.with_raw_response.create(
        model=f"openai/{broken}",
        input="hi",
        stream=True,
        extra_body={"models": [f"openai/{broken}", f"anthropic/{spare}"]},
    )
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert raw.headers["x-switchboard-model"] == f"anthropic/{spare}"
    events = list(raw.parse())
    client.close()
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == SPARE_REPLY
    check_moved_on(user, broken, spare, "responses")


@pytest.mark.parametrize("error", [OPENAI_LIMITED, OPENROUTER_LIMITED], ids=["openai", "openrouter"])
def test_with_no_other_route_a_chat_client_gets_the_providers_status_as_an_openai_error(
    error: bytes, gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("limited-first")
    fake_provider.script(model, answer_events=[error])
    client = openai_sdk(gateway, user)
    with pytest.raises(openai.RateLimitError) as raised:
        list(client.chat.completions.create(model=f"openai/{model}", messages=HI, stream=True))  # type: ignore[arg-type]
    client.close()
    assert raised.value.status_code == 429
    assert raised.value.response.headers["x-switchboard-attempts"] == "1"
    body = raised.value.response.json()
    assert body["error"]["type"] == "rate_limit_error" and RATE_LIMIT in body["error"]["message"]
    [record] = records_of_model(user, model)
    assert (record["status"], record["error_code"], record["stream"]) == ("error", "RATE_LIMITED", True)


def test_with_no_other_route_a_messages_client_gets_the_providers_status_as_an_anthropic_error(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("limited-first")
    fake_provider.script(model, answer_events=[ANTHROPIC_LIMITED])
    client = anthropic_sdk(gateway, user)
    with (
        pytest.raises(anthropic.RateLimitError) as raised,
        client.messages.stream(model=f"anthropic/{model}", max_tokens=20, messages=HI) as stream,  # type: ignore[arg-type]
    ):
        list(stream)
    client.close()
    assert raised.value.status_code == 429
    body = raised.value.response.json()
    assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert RATE_LIMIT in body["error"]["message"]
    [record] = records_of_model(user, model)
    assert (record["status"], record["error_code"], record["endpoint"]) == (
        "error",
        "RATE_LIMITED",
        "messages",
    )


def test_with_no_other_route_a_responses_client_gets_the_providers_status_as_an_openai_error(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("limited-first")
    fake_provider.script(model, answer_events=[RESPONSES_LIMITED])
    client = openai_sdk(gateway, user)
    with pytest.raises(openai.RateLimitError) as raised:
        list(client.responses.create(model=f"openai/{model}", input="hi", stream=True))
    client.close()
    assert raised.value.status_code == 429
    body = raised.value.response.json()
    assert body["error"]["type"] == "rate_limit_error" and RATE_LIMIT in body["error"]["message"]
    [record] = records_of_model(user, model)
    assert (record["status"], record["error_code"], record["endpoint"]) == (
        "error",
        "RATE_LIMITED",
        "responses",
    )


def test_a_ping_before_the_error_has_begun_the_stream(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    """An event is an event: after Anthropic's `ping` (or `message_start`) bytes have reached the
    client, so the error goes out as it came, at the end of a 200 stream, and no other route is tried."""
    broken, spare = unique_model("ping-first"), unique_model("spare")
    ping = anthropic_wire.event("ping", {"type": "ping"})
    fake_provider.script(broken, answer_events=[ping, ANTHROPIC_LIMITED])
    body = {
        "model": f"anthropic/{broken}",
        "models": [f"anthropic/{broken}", f"openai/{spare}"],
        "max_tokens": 20,
        "messages": HI,
        "stream": True,
    }
    with httpx.stream(
        "POST", f"{gateway.url}/v1/messages", json=body, headers={"x-api-key": user.token}, timeout=20
    ) as response:
        raw = response.read()
    assert response.status_code == 200 and response.headers["x-switchboard-attempts"] == "1"
    assert raw == ping + ANTHROPIC_LIMITED
    assert fake_provider.received(spare) == []
    [record] = records_of_model(user, broken)
    assert (record["status"], record["error_code"]) == ("error", "RATE_LIMITED")
