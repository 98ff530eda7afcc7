"""Idempotency holds across two app instances on one database (PostgreSQL, and SQLite too)."""

from __future__ import annotations

import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway, User
from tests.support.probe import EXECUTIONS, ProbeFactory, unique_name


@pytest.fixture(scope="module")
def replicas(make_probe_gateway: ProbeFactory, databases: DatabaseFactory) -> tuple[Gateway, Gateway]:
    shared = asyncio.run(databases.create())
    return make_probe_gateway(database_url=shared), make_probe_gateway(database_url=shared)


def on(gateway: Gateway, user: User) -> httpx.Client:
    return gateway.client(user.token)


def test_a_response_stored_by_one_replica_is_replayed_by_the_other(replicas: tuple[Gateway, Gateway]) -> None:
    a, b = replicas
    assert a.url != b.url
    user = a.user()
    name, key = unique_name(), str(uuid.uuid4())
    first = on(a, user).post("/probe/items", json={"name": name}, headers={"idempotency-key": key})
    second = on(b, user).post("/probe/items", json={"name": name}, headers={"idempotency-key": key})
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers["idempotent-replayed"] == "true"
    assert EXECUTIONS[name] == 1


def test_another_body_on_the_other_replica_is_a_conflict(replicas: tuple[Gateway, Gateway]) -> None:
    a, b = replicas
    user = a.user()
    name, key = unique_name(), str(uuid.uuid4())
    on(a, user).post("/probe/items", json={"name": name, "count": 1}, headers={"idempotency-key": key})
    other = on(b, user).post(
        "/probe/items", json={"name": name, "count": 9}, headers={"idempotency-key": key}
    )
    assert other.status_code == 400
    assert other.json()["code"] == "IDEMPOTENCY_CONFLICT"


def test_a_request_running_on_one_replica_is_a_409_on_the_other(replicas: tuple[Gateway, Gateway]) -> None:
    a, b = replicas
    user = a.user()
    name, key = unique_name(), str(uuid.uuid4())
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(
            on(a, user).post, "/probe/items?delay=1.0", json={"name": name}, headers={"idempotency-key": key}
        )
        while EXECUTIONS[name] == 0 and not slow.done():
            time.sleep(0.01)
        during = on(b, user).post(
            "/probe/items?delay=1.0", json={"name": name}, headers={"idempotency-key": key}
        )
        assert slow.result().status_code == 201
    assert during.status_code == 409
    assert during.json()["code"] == "CONFLICT"
    assert EXECUTIONS[name] == 1


def test_a_burst_of_retries_across_both_replicas_executes_once(replicas: tuple[Gateway, Gateway]) -> None:
    a, b = replicas
    user = a.user()
    name, key = unique_name(), str(uuid.uuid4())
    clients = [on(a, user), on(b, user)]

    def call(i: int) -> httpx.Response:
        return clients[i % 2].post(
            "/probe/items?delay=0.2", json={"name": name}, headers={"idempotency-key": key}
        )

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(call, range(16)))
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {201, 409}
    assert 201 in statuses
    assert EXECUTIONS[name] == 1
    assert all(r.json()["execution"] == 1 for r in responses if r.status_code == 201)


def test_a_5xx_on_one_replica_lets_the_other_run_the_retry(replicas: tuple[Gateway, Gateway]) -> None:
    a, b = replicas
    user = a.user()
    name, key = unique_name(), str(uuid.uuid4())
    assert (
        on(a, user).post("/probe/flaky", json={"name": name}, headers={"idempotency-key": key}).status_code
        == 503
    )
    retried = on(b, user).post("/probe/flaky", json={"name": name}, headers={"idempotency-key": key})
    assert retried.status_code == 200 and retried.json()["execution"] == 2
