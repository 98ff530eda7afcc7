"""End to end: /v1 calls through the fake provider produce exact usage records, committed before the end."""

from __future__ import annotations

import itertools
import json
import socket
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from switchboard.metering.economies import economy_id_for
from tests.llm.conftest import Caller, make_caller, unique_model
from tests.metering.conftest import TEAM_MARKUP_BPS, TEAM_OVERRIDE, EconomyFactory, add_participant
from tests.support.gateway import Gateway, User

# The metering gateway's catalog prices, per million tokens.
CATALOG = {
    "openai/gpt-4o-mini": ("0.15", "0.60"),
    "anthropic/claude-3-5-haiku-latest": ("0.80", "4.00"),
    "gemini/gemini-2.0-flash": ("0.10", "0.40"),
}


def nanos(prompt: int, completion: int, prices: tuple[str, str], markup_bps: int = 0) -> str:
    """The expected cost, computed independently of the gateway's code."""
    exact = (prompt * Decimal(prices[0]) + completion * Decimal(prices[1])) * 1000
    exact = exact * (10_000 + markup_bps) / 10_000
    return str(int(exact.to_integral_value(rounding="ROUND_HALF_UP")))


@pytest.fixture()
def caller(metering_gateway: Gateway, fake_provider: Any) -> Iterator[Caller]:
    made = make_caller(metering_gateway, fake_provider)
    yield made
    made.sdk.close()


def records_of(user: User, request_id: str) -> list[dict[str, Any]]:
    response = user.client.get("/usage/me", params={"limit": 500})
    assert response.status_code == 200
    return [r for r in response.json()["data"] if r["request_id"] == request_id]


def the_record(user: User, request_id: str, wait: float = 0.0) -> dict[str, Any]:
    """Exactly one record for the call. `wait` only for calls whose client went away mid-way."""
    deadline = time.monotonic() + wait
    while not (found := records_of(user, request_id)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(found) == 1, found
    return found[0]


def chat(
    user: User, model: str, *, stream: bool = False, headers: dict[str, str] | None = None, **body: Any
) -> httpx.Response:
    request_id = uuid.uuid4().hex
    response = user.client.post(
        "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream, **body},
        headers={"x-request-id": request_id, **(headers or {})},
    )
    assert response.headers["x-request-id"] == request_id
    return response


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("selector", list(CATALOG))
def test_tokens_and_cost_equal_the_providers_usage_and_the_catalog_prices(
    caller: Caller, fake_provider: Any, selector: str, stream: bool
) -> None:
    provider, model = selector.split("/")
    fake_provider.enqueue(model, prompt_tokens=1234, completion_tokens=567)
    response = chat(caller.user, selector, stream=stream)
    assert response.status_code == 200, response.text
    if stream:
        assert response.text.endswith("data: [DONE]\n\n")
    # No waiting: the record is committed before the response's last byte.
    record = the_record(caller.user, response.headers["x-request-id"])
    assert {
        k: record[k]
        for k in (
            "provider",
            "model",
            "selector",
            "endpoint",
            "stream",
            "status",
            "prompt_tokens",
            "completion_tokens",
            "cost",
            "priced",
            "economy_id",
            "user_id",
            "credential_id",
            "credential_scope",
            "error_code",
        )
    } == {
        "provider": provider,
        "model": model,
        "selector": selector,
        "endpoint": "chat.completions",
        "stream": stream,
        "status": "ok",
        "prompt_tokens": 1234,
        "completion_tokens": 567,
        "cost": nanos(1234, 567, CATALOG[selector]),
        "priced": True,
        "economy_id": str(economy_id_for("default")),
        "user_id": str(caller.user.id),
        "credential_id": caller.credential_ids[provider],
        "credential_scope": "user",
        "error_code": None,
    }
    assert (record["input_per_mtok"], record["output_per_mtok"]) == CATALOG[selector]
    assert record["latency_ms"] >= 0 and (record["ttft_ms"] is not None) == stream


def test_cached_and_reasoning_tokens_are_recorded(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.enqueue(
        model, prompt_tokens=100, completion_tokens=50, cached_tokens=40, reasoning_tokens=20
    )
    response = chat(caller.user, f"openai/{model}")
    record = the_record(caller.user, response.headers["x-request-id"])
    assert (record["cached_tokens"], record["reasoning_tokens"]) == (40, 20)


def test_x_economy_id_meters_to_that_economy_with_its_prices_and_markup(
    caller: Caller, fake_provider: Any, admin: User
) -> None:
    add_participant(admin.client, "team", user_id=str(caller.user.id))
    fake_provider.enqueue("gpt-4o-mini", prompt_tokens=1000, completion_tokens=333)
    response = chat(caller.user, "fast", headers={"x-economy-id": "team"}, stream=True)
    assert response.status_code == 200
    record = the_record(caller.user, response.headers["x-request-id"])
    prices = (TEAM_OVERRIDE["input_per_mtok"], TEAM_OVERRIDE["output_per_mtok"])
    assert record["economy_id"] == str(economy_id_for("team"))
    assert record["cost"] == nanos(1000, 333, prices, TEAM_MARKUP_BPS)
    assert (record["markup_bps"], record["price_source"], record["selector"]) == (
        TEAM_MARKUP_BPS,
        "override",
        "fast",
    )


def test_naming_an_economy_you_are_not_in_is_403_and_calls_nothing(
    caller: Caller, fake_provider: Any, make_economy: EconomyFactory
) -> None:
    economy = make_economy()
    model = unique_model()
    forbidden = chat(caller.user, f"openai/{model}", headers={"x-economy-id": economy["id"]})
    unknown = chat(caller.user, f"openai/{model}", headers={"x-economy-id": "no-such-economy"})
    assert (forbidden.status_code, unknown.status_code) == (403, 404)
    assert fake_provider.received(model) == []
    assert records_of(caller.user, forbidden.headers["x-request-id"]) == []


def test_a_model_no_price_source_knows_is_recorded_unpriced(caller: Caller, fake_provider: Any) -> None:
    model = unique_model("unpriced")
    response = chat(caller.user, f"openai/{model}")
    record = the_record(caller.user, response.headers["x-request-id"])
    assert (record["cost"], record["priced"], record["prompt_tokens"]) == ("0", False, 11)


def test_an_unlisted_model_is_priced_from_litellms_cost_map(caller: Caller, fake_provider: Any) -> None:
    fake_provider.enqueue("gpt-4o", prompt_tokens=2000, completion_tokens=100)
    response = chat(caller.user, "openai/gpt-4o")
    record = the_record(caller.user, response.headers["x-request-id"])
    assert (record["price_source"], record["priced"]) == ("litellm", True)
    prices = (record["input_per_mtok"], record["output_per_mtok"])
    assert Decimal(prices[0]) > 0 and record["cost"] == nanos(2000, 100, prices)


def test_a_failed_call_is_recorded_as_an_error(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.enqueue(model, fail="server_error")
    response = chat(caller.user, f"openai/{model}")
    assert response.status_code == 502
    record = the_record(caller.user, response.headers["x-request-id"])
    assert (record["status"], record["cost"], record["prompt_tokens"]) == ("error", "0", 0)
    assert record["error_code"]


def test_a_stream_that_fails_midway_is_recorded_as_an_error(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.enqueue(model, reply="one two three four five", break_after=2)
    response = chat(caller.user, f"openai/{model}", stream=True)
    assert "data: [DONE]" not in response.text
    record = the_record(caller.user, response.headers["x-request-id"])
    assert (record["status"], record["stream"]) == ("error", True)


def test_a_stream_the_client_abandons_is_recorded_as_cancelled(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.enqueue(model, endless=True, chunk_delay=0.01)
    request_id = uuid.uuid4().hex
    with caller.user.client.stream(
        "POST",
        "/v1/chat/completions",
        headers={"x-request-id": request_id},
        json={"model": f"openai/{model}", "messages": [{"role": "user", "content": "go on"}], "stream": True},
    ) as response:
        lines = response.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))
    record = the_record(caller.user, request_id, wait=5)
    assert (record["status"], record["stream"], record["model"]) == ("cancelled", True, model)


def test_a_stream_abandoned_before_the_provider_counted_it_is_billed_on_an_estimate(
    caller: Caller, fake_provider: Any
) -> None:
    """Leaving just before the usage chunk must not make an answer free (the provider bills it anyway)."""
    fake_provider.enqueue("gpt-4o-mini", reply="alpha beta gamma delta epsilon zeta", stall_after=5)
    request_id = uuid.uuid4().hex
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "go on"}], "stream": True}
    with caller.user.client.stream(
        "POST", "/v1/chat/completions", headers={"x-request-id": request_id}, json=body
    ) as response:
        data = [line for line in itertools.islice(response.iter_lines(), 10) if line.startswith("data: ")]
        assert len(data) == 5  # the role chunk and four words; then the provider goes quiet
    record = the_record(caller.user, request_id, wait=5)
    assert (record["status"], record["error_code"]) == ("cancelled", "usage_estimated")
    # "user" + "go on": 9 characters at 4 a token; a token for each chunk after the role chunk.
    assert (record["prompt_tokens"], record["completion_tokens"]) == (3, 4)
    # gpt-4o-mini at 0.15 and 0.60 per million tokens, in nano-units.
    assert (record["priced"], record["cost"]) == (True, str(3 * 150 + 4 * 600))


def test_every_completed_call_is_readable_at_once(caller: Caller, fake_provider: Any) -> None:
    for index in range(10):
        response = chat(caller.user, "openai/gpt-4o-mini", stream=index % 2 == 1)
        assert response.status_code == 200
        assert len(records_of(caller.user, response.headers["x-request-id"])) == 1


def test_embeddings_are_metered(caller: Caller, fake_provider: Any) -> None:
    fake_provider.enqueue("text-embedding-3-small", prompt_tokens=4321, completion_tokens=0)
    request_id = uuid.uuid4().hex
    response = caller.user.client.post(
        "/v1/embeddings",
        headers={"x-request-id": request_id},
        json={"model": "openai/text-embedding-3-small", "input": "hello"},
    )
    assert response.status_code == 200, response.text
    record = the_record(caller.user, request_id)
    assert (record["endpoint"], record["prompt_tokens"], record["cost"]) == (
        "embeddings",
        4321,
        nanos(4321, 0, ("0.02", "0")),
    )


def test_the_summary_of_real_calls_equals_the_sum_of_their_records(
    caller: Caller, fake_provider: Any, admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy(markup_bps=700)
    add_participant(admin.client, economy["id"], user_id=str(caller.user.id))
    for index, selector in enumerate(["fast", "claude", "gemini/gemini-2.0-flash", "openai/gpt-4o-mini"]):
        fake_provider.enqueue(
            selector.split("/")[-1] if "/" in selector else None,
            prompt_tokens=100 + index,
            completion_tokens=7 * index + 1,
        )
        assert (
            chat(
                caller.user, selector, headers={"x-economy-id": economy["slug"]}, stream=index % 2 == 0
            ).status_code
            == 200
        )
    usage = admin.client.get(f"/economies/{economy['id']}/usage").json()["data"]
    summary = admin.client.get(
        f"/economies/{economy['id']}/usage/summary", params={"group_by": "model"}
    ).json()
    assert len(usage) == 4
    assert summary["totals"]["cost"] == str(sum(int(r["cost"]) for r in usage))
    assert summary["totals"]["prompt_tokens"] == sum(r["prompt_tokens"] for r in usage) == 406


def test_a_markup_change_applies_to_the_very_next_call(
    caller: Caller, fake_provider: Any, admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy(markup_bps=100)
    add_participant(admin.client, economy["slug"], user_id=str(caller.user.id))
    headers = {"x-economy-id": economy["slug"]}
    first = chat(caller.user, "openai/gpt-4o-mini", headers=headers)
    assert the_record(caller.user, first.headers["x-request-id"])["markup_bps"] == 100
    changed = admin.client.patch(f"/economies/{economy['id']}", json={"markup_bps": 2500})
    assert changed.status_code == 200, changed.text
    fake_provider.enqueue("gpt-4o-mini", prompt_tokens=1000, completion_tokens=1000)
    second = chat(caller.user, "openai/gpt-4o-mini", headers=headers)
    record = the_record(caller.user, second.headers["x-request-id"])
    assert record["markup_bps"] == 2500
    assert record["cost"] == nanos(1000, 1000, CATALOG["openai/gpt-4o-mini"], 2500)


def _leave_once_the_provider_has_it(
    gateway: Gateway, fake_provider: Any, user: User, body: dict[str, Any], request_id: str
) -> None:
    """A raw client: the whole request; it hangs up, unanswered, once the provider has the request."""
    host, port = gateway.url.removeprefix("http://").split(":")
    payload = json.dumps(body).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {user.token}\r\n"
        f"content-type: application/json\r\nx-request-id: {request_id}\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    )
    seen = len(fake_provider.received("gpt-4o-mini"))
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(head.encode() + payload)
        deadline = time.monotonic() + 10
        while len(fake_provider.received("gpt-4o-mini")) == seen:
            assert time.monotonic() < deadline, "the provider never got the call"
            time.sleep(0.02)


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_its_client_leaves_before_the_answer_is_billed_its_prompt_estimate(
    metering_gateway: Gateway, caller: Caller, fake_provider: Any, stream: bool
) -> None:
    """The provider has the prompt and bills it: the record carries its estimate, so limits count it."""
    fake_provider.enqueue("gpt-4o-mini", first_byte_delay=30)
    request_id = uuid.uuid4().hex
    messages = [{"role": "user", "content": "x" * 40_000}]
    body = {"model": "openai/gpt-4o-mini", "messages": messages, "stream": stream}
    _leave_once_the_provider_has_it(metering_gateway, fake_provider, caller.user, body, request_id)
    record = the_record(caller.user, request_id, wait=10)
    assert (record["status"], record["error_code"], record["usage_estimated"]) == (
        "cancelled",
        "usage_estimated",
        True,
    )
    # "user" and the prompt, at four characters a token; nothing was answered.
    assert (record["prompt_tokens"], record["completion_tokens"]) == (10_001, 0)
    assert (record["priced"], record["cost"]) == (True, nanos(10_001, 0, CATALOG["openai/gpt-4o-mini"]))
