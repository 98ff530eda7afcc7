"""The store API the /v1 routes call directly: begin, complete, release, lease renewal, purge."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.db.engine import make_engine
from switchboard.db.migrate import upgrade
from switchboard.errors import BadRequest, Conflict, IdempotencyConflict
from switchboard.idempotency.service import (
    BodyMismatch,
    IdempotencyStore,
    InFlight,
    New,
    Replay,
    StoredResponse,
    check_key,
    fingerprint,
)
from tests.support.databases import DatabaseFactory


@pytest.fixture
async def engine(databases: DatabaseFactory) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(await databases.create())
    await upgrade(engine)
    yield engine
    await engine.dispose()


STREAM = StoredResponse(200, (("content-type", "text/event-stream"),), b"data: {}\n\ndata: [DONE]\n\n")


async def test_begin_complete_then_replay(engine: AsyncEngine) -> None:
    store = IdempotencyStore(engine, 3600)
    scope, key, fp = str(uuid.uuid4()), "k1", fingerprint("POST", "/v1/chat/completions", b'{"a": 1}')
    first = await store.begin(scope, key, fp)
    assert isinstance(first, New)
    assert isinstance(await store.begin(scope, key, fp), InFlight)
    await store.complete(first.claim, STREAM)
    again = await store.begin(scope, key, fp)
    assert again == Replay(STREAM)
    assert isinstance(
        await store.begin(scope, key, fingerprint("POST", "/v1/chat/completions", b"{}")), BodyMismatch
    )
    assert isinstance(await store.begin(str(uuid.uuid4()), key, fp), New)
    await store.close()


async def test_release_lets_the_next_begin_run(engine: AsyncEngine) -> None:
    store = IdempotencyStore(engine, 3600)
    first = await store.begin("s", "k", "f")
    assert isinstance(first, New)
    await store.release(first.claim)
    assert isinstance(await store.begin("s", "k", "f"), New)
    await store.close()


async def test_begin_or_raise_raises_the_documented_errors(engine: AsyncEngine) -> None:
    store = IdempotencyStore(engine, 3600)
    claimed = await store.begin_or_raise("s", "k", "f")
    assert isinstance(claimed, New)
    with pytest.raises(Conflict) as in_flight:
        await store.begin_or_raise("s", "k", "f")
    assert in_flight.value.status == 409 and in_flight.value.headers["Retry-After"] == "1"
    with pytest.raises(IdempotencyConflict) as mismatch:
        await store.begin_or_raise("s", "k", "other")
    assert mismatch.value.status == 400 and mismatch.value.code == "IDEMPOTENCY_CONFLICT"
    await store.close()


async def test_a_running_claim_keeps_renewing_its_lease(engine: AsyncEngine) -> None:
    store = IdempotencyStore(engine, 3600, lease_seconds=0.5)
    claim = await store.begin("s", "long-running", "f")
    assert isinstance(claim, New)
    await asyncio.sleep(1.5)  # three leases long: without renewal another replica could take over
    assert isinstance(await IdempotencyStore(engine, 3600).begin("s", "long-running", "f"), InFlight)
    await store.complete(claim.claim, STREAM)
    await store.close()


async def test_a_lost_claim_cannot_overwrite_the_new_owner(engine: AsyncEngine) -> None:
    crashed = IdempotencyStore(engine, 3600, lease_seconds=0.1)
    old = await crashed.begin("s", "k", "f")
    assert isinstance(old, New)
    assert old.claim._heartbeat is not None
    old.claim._heartbeat.cancel()
    await asyncio.sleep(0.2)
    survivor = IdempotencyStore(engine, 3600)
    new = await survivor.begin("s", "k", "f")
    assert isinstance(new, New)
    await crashed.complete(old.claim, StoredResponse(500, (), b"late"))  # too late: a no-op
    await crashed.release(old.claim)  # also a no-op
    assert isinstance(await survivor.begin("s", "k", "f"), InFlight)
    await survivor.complete(new.claim, STREAM)
    assert await survivor.begin("s", "k", "f") == Replay(STREAM)
    await survivor.close()


async def test_purge_removes_only_expired_keys(engine: AsyncEngine) -> None:
    expiring = IdempotencyStore(engine, 0)
    kept = IdempotencyStore(engine, 3600)
    gone = await expiring.begin("s", "old", "f")
    live = await kept.begin("s", "new", "f")
    assert isinstance(gone, New) and isinstance(live, New)
    await expiring.complete(gone.claim, STREAM)
    await kept.complete(live.claim, STREAM)
    assert await kept.purge_expired() == 1
    assert isinstance(await kept.begin("s", "new", "f"), Replay)
    await kept.close()
    await expiring.close()


def test_fingerprint_distinguishes_method_path_query_and_body() -> None:
    base = fingerprint("POST", "/a", b'{"x": 1}')
    assert base == fingerprint("post", "/a", b'{ "x":1 }')
    assert (
        len(
            {
                base,
                fingerprint("POST", "/b", b'{"x": 1}'),
                fingerprint("POST", "/a", b'{"x": 2}'),
                fingerprint("POST", "/a", b'{"x": 1}', "q=1"),
                fingerprint("PUT", "/a", b'{"x": 1}'),
            }
        )
        == 5
    )
    assert fingerprint("POST", "/a", b"not json") != fingerprint("POST", "/a", b"not  json")


@pytest.mark.parametrize("bad", ["", "a" * 256, "caf\u00e9", "a b"])
def test_check_key_refuses_unusable_keys(bad: str) -> None:
    with pytest.raises(BadRequest):
        check_key(bad)
