"""CredentialStore: room first, then own, then deployment; viewers excluded; changes seen within a second."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from switchboard.errors import NotFound, ServiceUnavailable
from tests.conftest import GatewayFactory, default_test_config
from tests.credentials.factories import new_credential
from tests.credentials.store_calls import in_reach, principal_of, reveal
from tests.groups.factories import delegated, room_cast
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER

ENV_PREFIX = f"SB_TEST_DEPLOY_{uuid.uuid4().hex[:8].upper()}"
GEMINI_ENV, OPENAI_ENV, MISSING_ENV = f"{ENV_PREFIX}_GEMINI", f"{ENV_PREFIX}_OPENAI", f"{ENV_PREFIX}_UNSET"


@pytest.fixture(scope="module")
def deployed(make_gateway: GatewayFactory) -> Gateway:
    config = default_test_config("")
    config["deployment_credentials"] = [
        {"provider": "gemini", "api_key_env": GEMINI_ENV},
        {"provider": "openai", "api_key_env": OPENAI_ENV, "base_url": "https://proxy.example.com/v1"},
        {"provider": "anthropic", "api_key_env": MISSING_ENV},
    ]
    return make_gateway(config=config)


@pytest.fixture
def deployment_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    keys = {
        GEMINI_ENV: RECORDER.remember_secret("gm-" + uuid.uuid4().hex),
        OPENAI_ENV: RECORDER.remember_secret("sk-deploy-" + uuid.uuid4().hex),
    }
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(MISSING_ENV, raising=False)
    yield keys


def test_room_credentials_come_first_then_own_then_deployment(
    deployed: Gateway, deployment_keys: dict[str, str]
) -> None:
    cast = room_cast(deployed)
    room_key, room_secret = new_credential(cast.owner, "openai", room_id=cast.room_id)
    own_openai, _ = new_credential(cast.member, "openai")
    own_anthropic, anthropic_secret = new_credential(cast.member, "anthropic")

    in_room = in_reach(deployed, cast.member, cast.room_id)
    assert {p: (r.scope, r.id) for p, r in in_room.items()} == {
        "openai": ("room", uuid.UUID(room_key["id"])),
        "anthropic": ("user", uuid.UUID(own_anthropic["id"])),
        "gemini": ("deployment", None),
    }
    assert reveal(deployed, in_room["openai"]) == room_secret
    assert reveal(deployed, in_room["anthropic"]) == anthropic_secret
    assert reveal(deployed, in_room["gemini"]) == deployment_keys[GEMINI_ENV]

    alone = in_reach(deployed, cast.member)
    assert alone["openai"].id == uuid.UUID(own_openai["id"]) and alone["openai"].scope == "user"


def test_a_deployment_credential_is_read_from_its_variable_when_used(
    deployed: Gateway, deployment_keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    user = deployed.user()
    refs = in_reach(deployed, user)
    assert set(refs) == {"openai", "gemini"}  # the anthropic variable is not set
    assert refs["openai"].base_url == "https://proxy.example.com/v1" and refs["openai"].id is None
    changed = RECORDER.remember_secret("sk-deploy-changed-" + uuid.uuid4().hex)
    monkeypatch.setenv(OPENAI_ENV, changed)
    assert reveal(deployed, refs["openai"]) == changed
    monkeypatch.delenv(OPENAI_ENV)
    assert "openai" not in in_reach(deployed, user)
    with pytest.raises(ServiceUnavailable):
        reveal(deployed, refs["openai"])


@pytest.mark.parametrize(
    ("role", "spends_room_key"), [("owner", True), ("manager", True), ("member", True), ("viewer", False)]
)
def test_room_credentials_are_spent_by_members_other_than_viewers(
    gateway: Gateway, role: str, spends_room_key: bool
) -> None:
    cast = room_cast(gateway)
    room_key, _ = new_credential(cast.owner, "gemini", room_id=cast.room_id)
    found = in_reach(gateway, cast.role(role), cast.room_id)
    assert ("gemini" in found and found["gemini"].id == uuid.UUID(room_key["id"])) is spends_room_key


def test_a_room_context_needs_membership(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    with pytest.raises(NotFound):
        in_reach(gateway, cast.outsider, cast.room_id)
    with pytest.raises(NotFound):
        in_reach(gateway, cast.owner, str(uuid.uuid4()))


def test_platform_viewers_and_read_tokens_spend_nothing(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    new_credential(cast.owner, "openai", room_id=cast.room_id)
    viewer = gateway.user("Viewer")
    assert in_reach(gateway, viewer) == {}
    assert in_reach(gateway, delegated(gateway, cast.owner, cast.room_id, "read")) == {}


def test_a_delegation_token_spends_from_the_room_it_acts_for(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    room_key, _ = new_credential(cast.owner, "openai", room_id=cast.room_id)
    agent = delegated(gateway, cast.member, cast.room_id, "write")
    assert in_reach(gateway, agent)["openai"].id == uuid.UUID(room_key["id"])
    with pytest.raises(NotFound):
        in_reach(gateway, agent, str(uuid.uuid4()))


def test_a_deleted_credential_stops_being_in_reach_within_a_second_on_every_replica(
    gateway: Gateway, make_gateway: GatewayFactory
) -> None:
    replica = make_gateway(database_url=gateway.settings.database_url)
    user = gateway.user()
    body, _ = new_credential(user, "anthropic")
    assert in_reach(replica, user)["anthropic"].id == uuid.UUID(body["id"])  # now cached on the replica
    assert user.client.delete(f"/llm-credentials/{body['id']}").status_code == 204
    deleted_at = time.monotonic()
    while "anthropic" in in_reach(replica, user):
        assert time.monotonic() - deleted_at < 1.0, "still in reach a second after deletion"
        time.sleep(0.02)


def test_a_revealed_secret_does_not_print(gateway: Gateway) -> None:
    user = gateway.user()
    _, secret = new_credential(user)
    ref = in_reach(gateway, user)["openai"]
    wrapped = gateway.server.call_soon(gateway.app.state.credentials.reveal(ref))
    assert secret not in f"{wrapped} {wrapped!r} {ref!r}"


def test_touch_records_last_used_without_waiting(gateway: Gateway) -> None:
    user = gateway.user()
    body, _ = new_credential(user)
    ref = in_reach(gateway, user)["openai"]
    store = gateway.app.state.credentials
    started = time.monotonic()
    store.touch(ref)

    async def awaited() -> None:
        await store.touch(ref)

    gateway.server.call_soon(awaited())
    assert time.monotonic() - started < 0.5
    deadline = time.monotonic() + 5
    while user.client.get(f"/llm-credentials/{body['id']}").json()["last_used_at"] is None:
        assert time.monotonic() < deadline, "last_used_at was never written"
        time.sleep(0.1)


@contextlib.contextmanager
def credential_reads(gateway: Gateway) -> Iterator[list[str]]:
    """The queries the gateway sends for stored credentials while the block runs."""
    engine = gateway.app.state.engine.sync_engine
    seen: list[str] = []

    def seen_by(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM llm_credentials" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", seen_by)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", seen_by)


def test_calls_that_find_a_callers_credentials_unread_share_one_read(gateway: Gateway) -> None:
    """A busy caller's calls find the cached entry expired at once: one read answers them all, where
    each its own read took a connection of its own (opened past the pool's size, and closed)."""
    user = gateway.user()
    new_credential(user, "openai")
    store, principal = gateway.app.state.credentials, principal_of(gateway, user)

    async def sixteen_at_once() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(store.in_reach(principal) for _ in range(16))))

    with credential_reads(gateway) as reads:
        found = gateway.server.call_soon(sixteen_at_once())
    assert len(reads) == 1
    assert all(set(each) == {"openai"} for each in found)


def test_a_read_under_way_when_credentials_change_here_is_not_joined_by_later_calls(
    gateway: Gateway,
) -> None:
    """A change on this replica (`invalidate`) is seen by the next call at once: it reads again rather
    than wait for an answer read before the change."""
    user = gateway.user()
    new_credential(user, "openai")
    store, principal = gateway.app.state.credentials, principal_of(gateway, user)

    async def change_during_a_read() -> None:
        before = asyncio.ensure_future(store.in_reach(principal))
        while not before.done() and not store._loading:  # the read under way
            await asyncio.sleep(0)
        store.invalidate()
        await asyncio.gather(before, store.in_reach(principal))

    with credential_reads(gateway) as reads:
        gateway.server.call_soon(change_during_a_read())
    assert len(reads) == 2
