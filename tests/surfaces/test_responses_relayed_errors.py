"""A Responses stream relayed to an `openai` credential that fails part-way (SPEC §16, §8): the
provider's `response.failed` or `error` event reaches the client as it came, once, and the call's usage
record says `error`, with the code the failure maps to and the usage the failed response reports."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes import responses_wire
from tests.fakes.provider import FakeProvider
from tests.fakes.script import Script
from tests.llm.conftest import (
    credentialed_user,
    records_of_model,
    unique_model,
)
from tests.support.gateway import Gateway, User
from tests.support.sdks import openai_client

COUNTED = Script(prompt_tokens=321, completion_tokens=2)


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    return make_gateway(default_test_config(fake_provider.base_url))


@pytest.fixture(scope="module")
def user(gateway: Gateway, fake_provider: FakeProvider) -> User:
    return credentialed_user(gateway, fake_provider, ("openai",))


def started(model: str) -> list[bytes]:
    """created, in_progress, the message item and its part, and the deltas `Hel ` and `lo`
    (sequence numbers 0 to 5)."""
    events = responses_wire.response_events(Script(reply="Hel lo"), {"model": model}, "resp_broken")
    return list(events)[:6]


def run(gateway: Gateway, user: User, model: str) -> tuple[list[Any], bytes]:
    """The events the openai SDK gives the client, and the stream's bytes."""
    client = openai_client(gateway, user)
    events = list(client.responses.create(model=f"openai/{model}", input="hi", stream=True))
    client.close()
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/responses",
        json={"model": f"openai/{model}", "input": "hi", "stream": True},
        headers={"authorization": f"Bearer {user.token}"},
    ) as response:
        raw = response.read()
    return events, raw


def test_a_failed_response_reaches_the_client_as_it_came_and_is_recorded_as_the_failure(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("failed")
    failed = responses_wire.failed_event(
        {"model": model},
        "resp_broken",
        6,
        "server_error",
        "The model failed to generate a response.",
        responses_wire.usage_of(COUNTED),
    )
    fake_provider.script(model, answer_events=[*started(model), failed])

    events, raw = run(gateway, user, model)
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert deltas == ["Hel ", "lo"]
    assert events[-1].type == "response.failed"
    assert events[-1].response.error.code == "server_error"
    assert raw.endswith(failed) and raw.count(b"event: response.failed") == 1
    assert b"event: error" not in raw and b"response.completed" not in raw

    for record in records_of_model(user, model, count=2):
        assert (record["status"], record["endpoint"], record["stream"]) == ("error", "responses", True)
        assert record["error_code"] == "LLM_FAILED"
        # The failed response's own count, not an estimate.
        assert (record["prompt_tokens"], record["completion_tokens"]) == (321, 2)
    assert len(records_of_model(user, model)) == 2


def test_an_error_event_reaches_the_client_as_it_came_and_is_recorded_with_its_kind(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("error-event")
    error = responses_wire.error_event(6, "rate_limit_exceeded", "Rate limit reached for requests.")
    fake_provider.script(model, answer_events=[*started(model), error])

    events, raw = run(gateway, user, model)
    assert events[-1].type == "error"
    assert (events[-1].code, events[-1].sequence_number) == ("rate_limit_exceeded", 6)
    assert raw.endswith(error) and raw.count(b"event: error") == 1

    found = records_of_model(user, model, count=2)
    assert len(found) == 2
    for record in found:
        assert (record["status"], record["error_code"]) == ("error", "RATE_LIMITED")
