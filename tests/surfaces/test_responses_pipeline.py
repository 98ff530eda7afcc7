"""/v1/responses walks the one pipeline chat completions walks (SPEC §16): idempotency, limits,
routing across a relayed and a translated provider, cancellation and mid-stream failures, metering."""

from __future__ import annotations

import uuid

import openai
import pytest

from tests.fakes.provider import FakeProvider
from tests.llm.conftest import Caller, records_of_model, unique_model
from tests.support.gateway import Gateway, User
from tests.surfaces.responses_sse import check_grammar, parse, types

PRICES = {"input_per_mtok": "0.15", "output_per_mtok": "0.60"}


@pytest.fixture
def admin(gateway: Gateway) -> User:
    return gateway.user(role="Admin")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_an_idempotency_key_replays_the_answer_without_a_second_call(
    kind: str, stream: bool, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"idem-{kind}")
    body = {"model": f"{kind}/{model}", "input": "once", "stream": stream}
    headers = {"Idempotency-Key": uuid.uuid4().hex}
    first = caller.user.client.post("/v1/responses", json=body, headers=headers)
    again = caller.user.client.post("/v1/responses", json=body, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    if stream:
        events = parse(again.content)
        check_grammar(events, relayed=kind == "openai")
        assert events[-1]["type"] == "response.completed"  # the held-back last event is replayed too
    assert len(fake_provider.received(model)) == 1
    assert len(records_of_model(caller.user, model)) == 1
    other = caller.user.client.post("/v1/responses", json={**body, "input": "other"}, headers=headers)
    assert other.status_code == 400
    assert other.json()["error"]["code"] == "idempotency_conflict"


def test_a_requests_limit_refuses_with_429_before_the_provider(
    caller: Caller, admin: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("rpm")
    limit = {"subject_type": "user", "subject_id": str(caller.user.id), "metric": "requests"}
    created = admin.client.post("/limits", json={**limit, "window": "minute", "amount": "1"})
    assert created.status_code == 201, created.text
    raw = caller.sdk.responses.with_raw_response.create(model=f"gemini/{model}", input="hi")
    assert raw.headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(openai.RateLimitError) as refused:
        caller.sdk.responses.create(model=f"gemini/{model}", input="hi")
    assert refused.value.code == "rate_limit_exceeded"
    assert int(refused.value.response.headers["retry-after"]) >= 1
    assert len(fake_provider.received(model)) == 1


@pytest.mark.parametrize(("kind", "field"), [("openai", "max_output_tokens"), ("anthropic", "max_tokens")])
def test_a_cost_limit_caps_the_output_in_the_field_each_provider_reads(
    kind: str, field: str, caller: Caller, admin: User, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"cap-{kind}")
    slug = f"resp-{uuid.uuid4().hex[:10]}"
    created = admin.client.post(
        "/economies", json={"slug": slug, "name": slug, "price_overrides": {f"{kind}/{model}": PRICES}}
    )
    assert created.status_code == 201, created.text
    joined = admin.client.post(f"/economies/{slug}/participants", json={"user_id": str(caller.user.id)})
    assert joined.status_code in (200, 201), joined.text
    limit = admin.client.post(
        "/limits",
        json={
            "subject_type": "economy",
            "subject_id": slug,
            "metric": "cost",
            "window": "month",
            "amount": "100000",
        },
    )
    assert limit.status_code == 201, limit.text
    raw = caller.sdk.responses.with_raw_response.create(
        model=f"{kind}/{model}", input="Hello there, how are you?", extra_headers={"X-Economy-Id": slug}
    )
    cap = int(raw.headers["x-switchboard-max-tokens"])
    assert 0 < cap < 200
    assert raw.parse().max_output_tokens == cap
    [sent] = fake_provider.received(model)
    assert sent.body[field] == cap
    status = admin.client.get(f"/limits/{limit.json()['id']}/status").json()
    assert status["reserved"] == "0" and int(status["used"]) > 0


@pytest.mark.parametrize("stream", [False, True])
def test_a_failing_relayed_provider_falls_back_to_a_translated_one(
    stream: bool, caller: Caller, fake_provider: FakeProvider
) -> None:
    down, spare = unique_model("down"), unique_model("spare")
    fake_provider.script(down, fail="server_error")
    fake_provider.script(spare, reply="From the spare.")
    body = {"models": [f"openai/{down}", f"anthropic/{spare}"], "input": "hi", "stream": stream}
    answer = caller.user.client.post("/v1/responses", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-switchboard-attempts"] == "2"
    assert answer.headers["x-switchboard-model"] == f"anthropic/{spare}"
    final = parse(answer.content)[-1]["response"] if stream else answer.json()
    assert final["output"][0]["content"][0]["text"] == "From the spare."
    [failed] = records_of_model(caller.user, down)
    [ok] = records_of_model(caller.user, spare)
    assert (failed["status"], failed["attempt"], failed["endpoint"]) == ("error", 1, "responses")
    assert (ok["status"], ok["attempt"], ok["endpoint"]) == ("ok", 2, "responses")
    assert failed["request_id"] == ok["request_id"]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_client_that_leaves_a_stream_cancels_the_provider_call(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"gone-{kind}")
    fake_provider.script(model, endless=True, chunk_delay=0.02)
    with caller.user.client.stream(
        "POST", "/v1/responses", json={"model": f"{kind}/{model}", "input": "x", "stream": True}
    ) as answer:
        assert next(line for line in answer.iter_lines() if line.startswith("data: "))
    assert fake_provider.wait_disconnect_sync(model, timeout=5) is not None
    [record] = records_of_model(caller.user, model)
    assert (record["status"], record["endpoint"]) == ("cancelled", "responses")


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_a_stream_that_breaks_off_ends_with_numbered_error_events(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"break-{kind}")
    fake_provider.script(model, reply="a b c d e f g h", break_after=4)
    with caller.user.client.stream(
        "POST", "/v1/responses", json={"model": f"{kind}/{model}", "input": "x", "stream": True}
    ) as answer:
        assert answer.status_code == 200
        data = b"".join(answer.iter_bytes())
    events = parse(data)
    assert events[0]["type"] == "response.created"
    assert "error" in types(events)
    assert "response.completed" not in types(events)
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(set(numbers))  # strictly increasing, the gateway's event included
    [record] = records_of_model(caller.user, model)
    assert (record["status"], record["endpoint"]) == ("error", "responses")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_agent_selector_puts_the_agents_prompt_and_cap_in_responses_terms(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"agent-{kind}")
    spec = {
        "id": f"agent-{uuid.uuid4().hex[:10]}",
        "version": "1",
        "display_name": "Pirate",
        "role": "assistant",
        "goal": "Talk like a pirate",
        "source": "user",
        "system_prompt": "You are a pirate.",
        "max_tokens": 321,
        "model": {"kind": "exact", "provider": kind, "model": model},
    }
    created = caller.user.client.post("/agents", json=spec)
    assert created.status_code == 201, created.text
    response = caller.sdk.responses.create(
        model=f"agent:{spec['id']}", input="hello", instructions="Be brief."
    )
    assert response.status == "completed"
    [sent] = fake_provider.received(model)
    text = str(sent.body)
    assert "You are a pirate." in text and "Be brief." in text
    if kind == "openai":  # relayed in the Responses shape: the agent's chat fields are gone
        assert sent.body["max_output_tokens"] == 321
        assert "messages" not in sent.body and "max_tokens" not in sent.body
    else:
        assert sent.body["max_tokens"] == 321
    [record] = records_of_model(caller.user, model)
    assert record["agent_id"] == spec["id"] and record["endpoint"] == "responses"
