"""Two gateways on one database behave as one service: refresh races and revocations hold across them."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.auth.conftest import delegate, issue_key, login, make_account, new_room
from tests.conftest import GatewayFactory
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER

Replicas = tuple[Gateway, Gateway]


@pytest.fixture(scope="module")
def replicas(make_gateway: GatewayFactory, databases: DatabaseFactory) -> Replicas:
    url = asyncio.run(databases.create())
    return make_gateway(database_url=url), make_gateway(database_url=url)


def race(replicas: Replicas, token: str) -> list[int]:
    """Present one refresh token to both replicas at the same instant (unrecorded: the winner's answer
    carries a new refresh token)."""
    clients = [httpx.Client(base_url=gw.url, timeout=30.0) for gw in replicas]
    for client in clients:
        client.get("/health")  # connections open before the start line
    start = threading.Barrier(len(clients))

    def go(client: httpx.Client) -> int:
        start.wait()
        return client.post("/auth/refresh", json={"refresh_token": token}).status_code

    try:
        with ThreadPoolExecutor(len(clients)) as pool:
            return sorted(pool.map(go, clients))
    finally:
        for client in clients:
            client.close()


def test_a_refresh_token_raced_on_two_replicas_is_honoured_exactly_once(replicas: Replicas) -> None:
    first, _ = replicas
    account = make_account(first)
    for _ in range(5):
        token = login(first, account)["refresh_token"]
        assert race(replicas, token) == [200, 401]


def test_an_api_key_revoked_on_one_replica_stops_on_the_other_at_once(replicas: Replicas) -> None:
    first, second = replicas
    owner = first.user()
    issued = issue_key(first, owner.token)
    on_second = second.client(issued["api_key"])
    assert on_second.get("/protected/jwt").status_code == 200
    assert first.client(owner.token).post(f"/auth/api-keys/{issued['id']}/revoke").status_code == 200
    assert on_second.get("/protected/jwt").status_code == 401


def test_a_reuse_seen_by_one_replica_ends_the_family_on_the_other(replicas: Replicas) -> None:
    first, second = replicas
    account = make_account(first)
    token = login(first, account)["refresh_token"]
    with httpx.Client(base_url=first.url) as unrecorded:
        rotated = RECORDER.remember_secret(
            unrecorded.post("/auth/refresh", json={"refresh_token": token}).json()["refresh_token"]
        )
    assert second.client().post("/auth/refresh", json={"refresh_token": token}).status_code == 401
    assert first.client().post("/auth/refresh", json={"refresh_token": rotated}).status_code == 401


def test_a_delegation_token_revoked_on_one_replica_stops_on_the_other_at_once(replicas: Replicas) -> None:
    first, second = replicas
    owner = first.user("Manager")
    result = delegate(owner, new_room(first, owner), ["write"]).json()
    agent = second.client(result["delegation_jwt"])
    assert agent.get("/protected/jwt").status_code == 200
    assert owner.client.delete(f"/auth/delegation/tokens/{result['delegation_token_id']}").status_code == 204
    assert agent.get("/protected/jwt").status_code == 401
