"""Trying the same route again (SPEC §14): on connect errors and connect timeouts, `retries`
more times; never on other 4xx; never once the first byte has reached the client; never once the
request may have reached the provider unanswered (SPEC §21)."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import openai
import pytest

from tests.routing.conftest import QUICK, Caller, key


@pytest.mark.parametrize("provider", ["openai", "mistral"])
def test_a_request_the_provider_read_then_dropped_is_never_sent_again(caller: Caller, provider: str) -> None:
    """SPEC §21: the provider may have run it (and billed it), so neither a retry nor the fallback."""
    flaky = key("flaky-1")  # the fake reads the request, then resets the connection
    base = caller.fake_provider.base_url + "/v1"
    credential = caller.add_key(provider, flaky, base_url=base)
    fallback = key()
    caller.add_key("anthropic", fallback)
    model = "openai/gpt-4o-mini" if provider == "openai" else "mistral/mistral-small-latest"
    with pytest.raises(openai.APIStatusError) as raised:
        caller.chat(model)
    assert raised.value.status_code == 502
    assert raised.value.code == "upstream_dropped"
    assert raised.value.response.headers["x-switchboard-attempts"] == "1"
    assert caller.tried(flaky) == 1 and caller.tried(fallback) == 0
    [record] = caller.records(raised.value.response.headers["x-request-id"])
    assert (record["status"], record["credential_id"]) == ("error", credential)


def test_a_provider_that_reads_the_request_and_never_answers_ends_the_call(caller: Caller) -> None:
    """SPEC §21 over §14: past the first-byte deadline the request may be running at the provider,
    so neither the same key again nor the other one; 504."""
    # gpt-quick's own routing: first_byte_timeout_s 0.5, retries 0.
    hanging, answering = key("hang"), key()
    caller.add_key("openai", hanging)
    caller.add_key("openai", answering)
    failed = None
    for _ in range(2):  # each key is first in line once
        try:
            caller.chat(f"openai/{QUICK}")
        except openai.APIStatusError as exc:
            failed = exc
    assert failed is not None and failed.status_code == 504
    assert failed.response.headers["x-switchboard-attempts"] == "1"
    assert caller.tried(hanging) == 1 and caller.tried(answering) == 1  # the other call's answer
    [record] = caller.records(failed.response.headers["x-request-id"])
    assert (record["status"], record["error_code"]) == ("error", "LLM_FAILED")


def test_a_stream_the_provider_never_answers_ends_the_call(caller: Caller) -> None:
    hanging, fallback = key("hang"), key()
    caller.add_key("openai", hanging)
    caller.add_key("anthropic", fallback)
    response = caller.post(
        {
            "model": f"openai/{QUICK}",
            "stream": True,
            "models": [f"openai/{QUICK}", "anthropic/claude-3-5-haiku-latest"],
        }
    )
    assert response.status_code == 504, response.text
    assert response.headers["x-switchboard-attempts"] == "1"
    assert caller.tried(hanging) == 1 and caller.tried(fallback) == 0


def test_a_refused_connection_is_retried_then_the_next_route(caller: Caller) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    caller.add_key("openai", key(), base_url=f"http://127.0.0.1:{closed}/v1")
    caller.add_key("anthropic", key())
    raw = caller.chat()
    assert raw.headers["x-switchboard-attempts"] == "3"  # two tries of the refused route, then anthropic
    records = caller.records(raw.headers["x-request-id"])
    assert [(r["provider"], r["status"]) for r in records] == [
        ("openai", "error"),
        ("openai", "error"),
        ("anthropic", "ok"),
    ]


def test_a_request_the_provider_refuses_is_not_tried_elsewhere(caller: Caller, fake_provider: Any) -> None:
    model = f"gpt-{uuid.uuid4().hex[:10]}"
    fake_provider.script(model, fail="bad_request")
    caller.add_key("openai", key())
    caller.add_key("openai", key())
    with pytest.raises(openai.BadRequestError) as raised:
        caller.chat(f"openai/{model}")
    assert raised.value.response.headers["x-switchboard-attempts"] == "1"
    assert len(fake_provider.received(model)) == 1


def test_a_stream_that_breaks_after_its_first_byte_is_not_tried_again(
    caller: Caller, fake_provider: Any
) -> None:
    model = f"gpt-{uuid.uuid4().hex[:10]}"
    fake_provider.script(model, break_after=2)
    caller.add_key("openai", key())
    caller.add_key("openai", key())
    response = caller.post({"model": f"openai/{model}", "stream": True})
    assert response.status_code == 200
    assert response.headers["x-switchboard-attempts"] == "1"
    assert '"error"' in response.text and "[DONE]" not in response.text
    assert len(fake_provider.received(model)) == 1
    [record] = caller.records(response.headers["x-request-id"])
    assert record["status"] == "error"


def test_a_stream_falls_back_before_its_first_byte(caller: Caller) -> None:
    caller.add_key("openai", key("down"))
    caller.add_key("anthropic", key())
    response = caller.post({"model": "openai/gpt-4o-mini", "stream": True})
    assert response.status_code == 200
    assert response.text.endswith("data: [DONE]\n\n")
    assert response.headers["x-switchboard-model"] == "anthropic/claude-3-5-haiku-latest"
    assert response.headers["x-switchboard-attempts"] == "2"


def test_a_streamed_request_the_provider_read_then_dropped_is_never_sent_again(caller: Caller) -> None:
    flaky = key("flaky-1")
    caller.add_key("openai", flaky)
    fallback = key()
    caller.add_key("anthropic", fallback)
    response = caller.post({"model": "openai/gpt-4o-mini", "stream": True})
    assert response.status_code == 502, response.text
    assert response.json()["error"]["code"] == "upstream_dropped"
    assert response.headers["x-switchboard-attempts"] == "1"
    assert caller.tried(flaky) == 1 and caller.tried(fallback) == 0
