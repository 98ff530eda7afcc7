"""An Idempotency-Key retry of a model call makes no second provider call and no second usage record."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import GatewayFactory
from tests.llm.conftest import Caller, make_caller, unique_model
from tests.metering.conftest import metering_config
from tests.support.gateway import Gateway


@pytest.fixture()
def caller(metering_gateway: Gateway, fake_provider: Any) -> Iterator[Caller]:
    made = make_caller(metering_gateway, fake_provider, providers=("openai",))
    yield made
    made.sdk.close()


def post(client: httpx.Client, model: str, key: str, stream: bool = False) -> httpx.Response:
    return client.post(
        "/v1/chat/completions",
        headers={"idempotency-key": key},
        json={
            "model": f"openai/{model}",
            "messages": [{"role": "user", "content": "once"}],
            "stream": stream,
        },
    )


def records_with_key(client: httpx.Client, key: str) -> list[dict[str, Any]]:
    data = client.get("/usage/me", params={"limit": 500}).json()["data"]
    return [r for r in data if r["idempotency_key"] == key]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_retry_replays_the_answer_without_a_second_call_or_record(
    caller: Caller, fake_provider: Any, stream: bool
) -> None:
    model, key = unique_model(), uuid.uuid4().hex
    first = post(caller.user.client, model, key, stream)
    retry = post(caller.user.client, model, key, stream)
    assert (first.status_code, retry.status_code) == (200, 200)
    assert retry.content == first.content
    assert retry.headers.get("idempotent-replayed") == "true"
    if stream:
        assert retry.headers["content-type"].startswith("text/event-stream")
        assert retry.text.endswith("data: [DONE]\n\n")
    assert len(fake_provider.received(model)) == 1
    (only,) = records_with_key(caller.user.client, key)
    assert only["request_id"] == first.headers["x-request-id"] != retry.headers["x-request-id"]


def test_a_duplicate_while_the_first_runs_is_409_and_still_one_record(
    caller: Caller, fake_provider: Any
) -> None:
    model, key = unique_model(), uuid.uuid4().hex
    fake_provider.enqueue(model, first_byte_delay=1.0)
    results: dict[str, httpx.Response] = {}
    first = threading.Thread(target=lambda: results.update(first=post(caller.user.client, model, key)))
    first.start()
    while not fake_provider.received(model):  # the first call is at the provider
        threading.Event().wait(0.01)
    duplicate = post(caller.user.client, model, key)
    first.join(10)
    assert (results["first"].status_code, duplicate.status_code) == (200, 409)
    assert duplicate.json()["error"]["code"] in ("conflict", "CONFLICT")
    assert len(fake_provider.received(model)) == 1
    assert len(records_with_key(caller.user.client, key)) == 1


def test_a_retry_on_another_replica_makes_no_second_call_or_record(
    metering_gateway: Gateway, make_gateway: GatewayFactory, fake_provider: Any, caller: Caller
) -> None:
    keys = ",".join(f"{k.kid}:{k.key.get_secret_value()}" for k in metering_gateway.settings.encryption_keys)
    other = make_gateway(
        config=metering_config(fake_provider.base_url),
        database_url=metering_gateway.settings.database_url,
        env={"SWITCHBOARD_ENCRYPTION_KEYS": keys},
    )
    try:
        on_other = other.client(caller.user.token)
        model, key = unique_model(), uuid.uuid4().hex
        first = post(caller.user.client, model, key, stream=True)
        retry = post(on_other, model, key, stream=True)
        assert (first.status_code, retry.status_code) == (200, 200)
        assert retry.content == first.content
        # A concurrent duplicate across replicas is refused too.
        slow, slow_key = unique_model(), uuid.uuid4().hex
        fake_provider.enqueue(slow, first_byte_delay=1.0)
        results: dict[str, httpx.Response] = {}
        runner = threading.Thread(target=lambda: results.update(first=post(on_other, slow, slow_key)))
        runner.start()
        while not fake_provider.received(slow):
            threading.Event().wait(0.01)
        duplicate = post(caller.user.client, slow, slow_key)
        runner.join(10)
        assert (results["first"].status_code, duplicate.status_code) == (200, 409)
    finally:
        other.stop()
    assert len(fake_provider.received(model)) == 1 and len(fake_provider.received(slow)) == 1
    assert len(records_with_key(caller.user.client, key)) == 1
    assert len(records_with_key(caller.user.client, slow_key)) == 1
