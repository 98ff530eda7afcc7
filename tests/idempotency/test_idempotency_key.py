"""Idempotency-Key on POSTs: replay, conflict, in-flight 409, caller scope, release on 5xx, takeover."""

from __future__ import annotations

import json
import threading
import time
import uuid

import httpx
import pytest

from switchboard.idempotency.service import IdempotencyStore, New, StoredResponse, fingerprint
from tests.support.gateway import Gateway
from tests.support.probe import EXECUTIONS, unique_name


def key() -> str:
    return str(uuid.uuid4())


def test_same_key_and_body_replays_the_stored_response_without_a_second_execution(
    probe_gateway: Gateway,
) -> None:
    client = probe_gateway.user().client
    name, k = unique_name(), key()
    first = client.post("/probe/items", json={"name": name, "count": 3}, headers={"idempotency-key": k})
    second = client.post("/probe/items", json={"name": name, "count": 3}, headers={"idempotency-key": k})
    assert first.status_code == second.status_code == 201
    assert (
        second.json()
        == first.json()
        == {"name": name, "count": 3, "execution": 1, "sub": first.json()["sub"]}
    )
    assert EXECUTIONS[name] == 1
    assert second.headers["location"] == first.headers["location"]
    assert second.headers["x-switchboard-probe"] == "1"
    assert second.headers["content-type"] == "application/json"
    assert second.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert second.headers["x-request-id"] != first.headers["x-request-id"]


def test_a_json_body_that_differs_only_in_spacing_and_key_order_replays(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    name, k = unique_name(), key()
    headers = {"idempotency-key": k, "content-type": "application/json"}
    client.post("/probe/items", content=json.dumps({"name": name, "count": 2}), headers=headers)
    again = client.post("/probe/items", content=f'{{ "count":2,  "name":"{name}" }}', headers=headers)
    assert again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert EXECUTIONS[name] == 1


def test_same_key_with_another_body_is_a_400_idempotency_conflict(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    name, k = unique_name(), key()
    client.post("/probe/items", json={"name": name, "count": 1}, headers={"idempotency-key": k})
    other = client.post("/probe/items", json={"name": name, "count": 2}, headers={"idempotency-key": k})
    assert other.status_code == 400
    assert other.json()["code"] == "IDEMPOTENCY_CONFLICT"
    assert EXECUTIONS[name] == 1


def test_same_key_on_another_path_is_a_conflict(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    name, k = unique_name(), key()
    client.post("/probe/items", json={"name": name}, headers={"idempotency-key": k})
    other = client.post("/probe/flaky", json={"name": name}, headers={"idempotency-key": k})
    assert other.status_code == 400
    assert other.json()["code"] == "IDEMPOTENCY_CONFLICT"


def test_same_key_while_the_first_is_running_is_a_409(probe_gateway: Gateway) -> None:
    user = probe_gateway.user()
    name, k = unique_name(), key()
    body = {"name": name}
    results: dict[str, httpx.Response] = {}

    def slow() -> None:
        results["slow"] = user.client.post(
            "/probe/items?delay=1.0", json=body, headers={"idempotency-key": k}
        )

    thread = threading.Thread(target=slow)
    thread.start()
    _wait_for_executions(name, 1)
    during = probe_gateway.client(user.token).post(
        "/probe/items?delay=1.0", json=body, headers={"idempotency-key": k}
    )
    thread.join()
    assert during.status_code == 409
    assert during.json()["code"] == "CONFLICT"
    assert during.headers["retry-after"] == "1"
    assert results["slow"].status_code == 201
    after = user.client.post("/probe/items?delay=1.0", json=body, headers={"idempotency-key": k})
    assert after.status_code == 201 and after.headers["idempotent-replayed"] == "true"
    assert EXECUTIONS[name] == 1


def test_keys_are_scoped_to_the_caller(probe_gateway: Gateway) -> None:
    alice, bob = probe_gateway.user(), probe_gateway.user()
    name, k = unique_name(), key()
    a = alice.client.post("/probe/items", json={"name": name}, headers={"idempotency-key": k})
    b = bob.client.post("/probe/items", json={"name": name}, headers={"idempotency-key": k})
    assert a.status_code == b.status_code == 201
    assert "idempotent-replayed" not in b.headers
    assert b.json()["sub"] == str(bob.id) and a.json()["sub"] == str(alice.id)
    assert EXECUTIONS[name] == 2


def test_two_tokens_of_the_same_user_share_keys(probe_gateway: Gateway) -> None:
    sub = uuid.uuid4()
    first, second = probe_gateway.user(sub=sub), probe_gateway.user(sub=sub)
    name, k = unique_name(), key()
    first.client.post("/probe/items", json={"name": name}, headers={"idempotency-key": k})
    again = second.client.post("/probe/items", json={"name": name}, headers={"idempotency-key": k})
    assert again.headers["idempotent-replayed"] == "true"
    assert EXECUTIONS[name] == 1


def test_the_header_is_ignored_on_anonymous_requests(probe_gateway: Gateway) -> None:
    client = probe_gateway.client()
    name, k = unique_name(), key()
    for _ in range(2):
        assert (
            client.post("/probe/anonymous", json={"name": name}, headers={"idempotency-key": k}).status_code
            == 200
        )
    assert EXECUTIONS[name] == 2


def test_requests_without_the_header_execute_every_time(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    name = unique_name()
    for _ in range(2):
        assert client.post("/probe/items", json={"name": name}).status_code == 201
    assert EXECUTIONS[name] == 2


def test_v1_paths_are_left_to_the_llm_domain(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    name, k = unique_name(), key()
    for _ in range(2):
        assert (
            client.post("/v1/probe", json={"name": name}, headers={"idempotency-key": k}).status_code == 200
        )
    assert EXECUTIONS[name] == 2


def test_a_5xx_outcome_releases_the_key_so_a_retry_runs_again(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    name, k = unique_name(), key()
    failed = client.post("/probe/flaky", json={"name": name}, headers={"idempotency-key": k})
    assert failed.status_code == 503
    retried = client.post("/probe/flaky", json={"name": name}, headers={"idempotency-key": k})
    assert retried.status_code == 200 and retried.json()["execution"] == 2
    replayed = client.post("/probe/flaky", json={"name": name}, headers={"idempotency-key": k})
    assert replayed.json()["execution"] == 2 and replayed.headers["idempotent-replayed"] == "true"


def test_a_crash_releases_the_key_so_a_retry_runs_again(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    name, k = unique_name(), key()
    assert client.post("/probe/crash", json={"name": name}, headers={"idempotency-key": k}).status_code == 500
    retried = client.post("/probe/crash", json={"name": name}, headers={"idempotency-key": k})
    assert retried.status_code == 200 and retried.json()["execution"] == 2


def test_a_4xx_outcome_is_stored_and_replayed(probe_gateway: Gateway) -> None:
    client = probe_gateway.user().client
    k = key()
    first = client.post("/probe/items", json={"count": 1}, headers={"idempotency-key": k})
    second = client.post("/probe/items", json={"count": 1}, headers={"idempotency-key": k})
    assert first.status_code == second.status_code == 400
    assert second.json() == first.json()
    assert second.headers["idempotent-replayed"] == "true"


@pytest.mark.parametrize("bad", ["", "x" * 256, "has space", "tab\tkey"])
def test_an_unusable_key_is_a_400(probe_gateway: Gateway, bad: str) -> None:
    response = probe_gateway.user().client.post(
        "/probe/items", json={"name": "x"}, headers={"idempotency-key": bad}
    )
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]


def test_a_key_left_in_flight_by_a_dead_replica_is_taken_over_after_its_lease(probe_gateway: Gateway) -> None:
    user = probe_gateway.user()
    name, k = unique_name(), key()
    body = json.dumps({"name": name}).encode()
    # What a replica that crashed mid-request leaves behind: an in-flight claim nobody renews.
    dead = IdempotencyStore(probe_gateway.app.state.engine, 3600, lease_seconds=1.0)

    async def crash_mid_request() -> None:
        result = await dead.begin(str(user.id), k, fingerprint("POST", "/probe/items", body))
        assert isinstance(result, New) and result.claim._heartbeat is not None
        result.claim._heartbeat.cancel()  # the process is gone: no more renewals

    probe_gateway.server.call_soon(crash_mid_request())
    headers = {"idempotency-key": k, "content-type": "application/json"}
    assert user.client.post("/probe/items", content=body, headers=headers).status_code == 409
    deadline = time.monotonic() + 10
    while (taken_over := user.client.post("/probe/items", content=body, headers=headers)).status_code == 409:
        assert time.monotonic() < deadline, "the dead claim was never taken over"
        time.sleep(0.1)
    assert taken_over.status_code == 201 and taken_over.json()["execution"] == 1
    assert EXECUTIONS[name] == 1
    assert (
        user.client.post("/probe/items", content=body, headers=headers).headers["idempotent-replayed"]
        == "true"
    )


def test_an_expired_key_executes_again(probe_gateway: Gateway) -> None:
    user = probe_gateway.user()
    name, k = unique_name(), key()
    short = IdempotencyStore(probe_gateway.app.state.engine, ttl_seconds=0)
    body = json.dumps({"name": name}).encode()

    async def stored_long_ago() -> None:
        result = await short.begin(str(user.id), k, fingerprint("POST", "/probe/items", body))
        assert isinstance(result, New)
        await short.complete(result.claim, StoredResponse(201, (), b"{}"))

    probe_gateway.server.call_soon(stored_long_ago())
    again = user.client.post(
        "/probe/items", content=body, headers={"idempotency-key": k, "content-type": "application/json"}
    )
    assert again.status_code == 201
    assert "idempotent-replayed" not in again.headers
    assert EXECUTIONS[name] == 1


def _wait_for_executions(name: str, count: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while EXECUTIONS[name] < count:
        assert time.monotonic() < deadline, f"{name} never executed"
        time.sleep(0.01)
