"""How usage rows reach the database: exactly as SQLAlchemy would store them, once per id, all or nothing."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy import Table, event, make_url, select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.db.batch_insert import PostgresBatchInsert, batch_insert
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.upsert import insert_for
from switchboard.metering.economies import economy_id_for
from switchboard.metering.models import UsageRecordRow
from switchboard.settlement.writer import usage_writer
from tests.metering.conftest import count_records, make_outcome, usage_table_locked
from tests.support.databases import backend
from tests.support.gateway import Gateway

DEFAULT = economy_id_for("default")
TABLE = cast(Table, UsageRecordRow.__table__)
COLUMNS = [column.name for column in TABLE.columns]
# asyncpg's protocol takes at most 32767 parameters per statement; this batch needs more.
OVER_THE_PARAMETER_LIMIT = 32767 // len(COLUMNS) + 50


def usage_row(user_id: uuid.UUID, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": uuid.uuid4(),
        "request_id": uuid.uuid4().hex,
        "occurred_at": datetime.now(UTC),
        "economy_id": DEFAULT,
        "user_id": user_id,
        "room_id": None,
        "agent_id": None,
        "session_id": None,
        "credential_id": None,
        "credential_scope": "user",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "selector": "default",
        "endpoint": "/v1/chat/completions",
        "stream": False,
        "status": "ok",
        "error_code": None,
        "prompt_tokens": 1,
        "completion_tokens": 2,
        "cached_tokens": 0,
        "reasoning_tokens": 0,
        "cost": 3,
        "priced": True,
        "input_per_mtok": "0.15",
        "output_per_mtok": "0.60",
        "markup_bps": 0,
        "price_source": "catalog",
        "latency_ms": 10,
        "ttft_ms": None,
        "idempotency_key": None,
        "usage_estimated": False,
        "api_key_id": None,
        "attempt": 1,
        "cache_write_tokens": 0,
        "cache_write_1h_tokens": 0,
        "service_tier": None,
        "prices": None,
        "cache_hit": False,
    }
    row.update(values)
    return row


def as_tuple(row: dict[str, Any]) -> tuple[object, ...]:
    return tuple(row[name] for name in COLUMNS)


async def _raw_rows(engine: AsyncEngine, ids: list[uuid.UUID]) -> dict[uuid.UUID, tuple[object, ...]]:
    """The rows as the driver returns them, untouched by SQLAlchemy's column types."""
    async with engine.connect() as conn:
        found = {}
        for record_id in ids:
            key = record_id.hex if engine.dialect.name == "sqlite" else record_id
            raw = (await conn.execute(text("SELECT * FROM usage_records WHERE id = :id"), {"id": key})).one()
            found[record_id] = tuple(raw)[1:]
        return found


def test_a_record_is_stored_exactly_as_sqlalchemy_core_stores_it(metering_gateway: Gateway) -> None:
    app = metering_gateway.app
    user_id = uuid.uuid4()
    occurred = datetime(2031, 3, 4, 5, 6, 7, 891011, tzinfo=timezone(timedelta(hours=-7)))
    outcome = make_outcome(
        economy_id_for("team"),
        user_id,
        occurred_at=occurred,
        room_id=uuid.uuid4(),
        agent_id="agent-1",
        session_id="session-1",
        error_code="upstream_failed",
        status="error",
        stream=True,
        cached_tokens=7,
        reasoning_tokens=9,
        ttft_ms=None,
        idempotency_key="key-1",
    )

    async def scenario() -> tuple[UsageRecordRow, dict[uuid.UUID, tuple[object, ...]], uuid.UUID]:
        await app.state.call_sink.record(outcome)
        async with app.state.sessionmaker() as session, session.begin():
            stored = (await session.scalars(select(UsageRecordRow).filter_by(user_id=user_id))).one()
            copy = {column: getattr(stored, column) for column in COLUMNS} | {"id": uuid.uuid4()}
            await session.execute(insert_for(session.get_bind().dialect.name)(TABLE).values(copy))
        return stored, await _raw_rows(app.state.engine, [stored.id, copy["id"]]), copy["id"]

    stored, raw, core_id = metering_gateway.server.call_soon(scenario())
    assert raw[stored.id] == raw[core_id]
    assert stored.occurred_at == occurred and stored.occurred_at.tzinfo is not None
    for name in ("economy_id", "user_id", "room_id", "credential_id", "agent_id", "session_id", "error_code"):
        assert getattr(stored, name) == getattr(outcome, name), name
    assert (stored.stream, stored.status, stored.cached_tokens, stored.reasoning_tokens) == (
        True,
        "error",
        7,
        9,
    )
    assert (stored.ttft_ms, stored.idempotency_key, stored.markup_bps) == (None, "key-1", 2500)
    assert stored.id.version == 7


def test_a_batch_sent_again_or_repeating_an_id_stores_each_id_once(metering_gateway: Gateway) -> None:
    engine: AsyncEngine = metering_gateway.app.state.engine
    user_id = uuid.uuid4()
    first, second, third = (usage_row(user_id, request_id=name) for name in ("first", "second", "third"))

    async def scenario() -> dict[uuid.UUID, tuple[object, ...]]:
        insert = batch_insert(engine, TABLE, COLUMNS)
        try:
            await insert.insert([as_tuple(first), as_tuple(second)])
            # A retry after a lost acknowledgement, plus a row that appears twice in one batch.
            changed = as_tuple(first | {"request_id": "changed"})
            await insert.insert([changed, as_tuple(second), as_tuple(third), as_tuple(third)])
        finally:
            await insert.close()
        return await _raw_rows(engine, [first["id"]])

    raw = metering_gateway.server.call_soon(scenario())
    assert count_records(metering_gateway, user_id=user_id) == 3
    assert "first" in raw[first["id"]]  # the row first stored is kept


def test_a_batch_with_one_bad_row_stores_none_of_its_rows(metering_gateway: Gateway) -> None:
    engine: AsyncEngine = metering_gateway.app.state.engine
    user_id = uuid.uuid4()
    good, bad = usage_row(user_id), usage_row(user_id, request_id=None)  # NOT NULL

    async def scenario() -> None:
        insert = batch_insert(engine, TABLE, COLUMNS)
        try:
            with pytest.raises(Exception, match=r"(?i)null"):
                await insert.insert([as_tuple(good), as_tuple(bad)])
        finally:
            await insert.close()

    metering_gateway.server.call_soon(scenario())
    assert count_records(metering_gateway, user_id=user_id) == 0


def test_the_batch_after_a_failed_one_is_stored(metering_gateway: Gateway) -> None:
    engine: AsyncEngine = metering_gateway.app.state.engine
    user_id = uuid.uuid4()

    async def scenario() -> None:
        insert = batch_insert(engine, TABLE, COLUMNS)
        try:
            with pytest.raises(Exception, match=r"(?i)null"):
                await insert.insert([as_tuple(usage_row(user_id, request_id=None))])
            await insert.insert([as_tuple(usage_row(user_id))])
        finally:
            await insert.close()

    metering_gateway.server.call_soon(scenario())
    assert count_records(metering_gateway, user_id=user_id) == 1


def test_a_batch_beyond_one_statements_parameter_limit_is_one_transaction(metering_gateway: Gateway) -> None:
    app = metering_gateway.app
    user_id = uuid.uuid4()

    async def scenario() -> tuple[int, int]:
        writer = usage_writer(app.state.sessionmaker, {}, max_batch=2 * OVER_THE_PARAMETER_LIMIT)
        writer.start()
        try:
            # Every call queues its record before the writer task runs again: they make one batch.
            outcomes = [make_outcome(DEFAULT, user_id) for _ in range(OVER_THE_PARAMETER_LIMIT)]
            await asyncio.gather(*(writer.record(outcome) for outcome in outcomes))
            return writer.batches, writer.records
        finally:
            await writer.close()

    assert metering_gateway.server.call_soon(scenario(), timeout=120) == (1, OVER_THE_PARAMETER_LIMIT)
    assert count_records(metering_gateway, user_id=user_id) == OVER_THE_PARAMETER_LIMIT


def test_a_record_whose_economy_is_cached_takes_no_connection_from_the_pool(
    metering_gateway: Gateway,
) -> None:
    """One round trip per batch: no session (and no pooled connection) just to read cached economies."""
    url = metering_gateway.settings.database_url
    user_id = uuid.uuid4()

    async def scenario() -> int:
        engine = make_engine(url)
        checkouts: list[object] = []
        event.listen(engine.sync_engine, "checkout", lambda *args: checkouts.append(args))
        writer = usage_writer(make_sessionmaker(engine), {})
        writer.start()
        try:
            await writer.record(
                make_outcome(DEFAULT, user_id)
            )  # reads the economy, opens the insert's connection
            before = len(checkouts)
            for _ in range(20):
                await writer.record(make_outcome(DEFAULT, user_id))
            return len(checkouts) - before
        finally:
            await writer.close()
            await engine.dispose()

    assert metering_gateway.server.call_soon(scenario()) == 0
    assert count_records(metering_gateway, user_id=user_id) == 21


def test_a_record_waiting_for_a_lock_leaves_the_event_loop_free(metering_gateway: Gateway) -> None:
    app = metering_gateway.app
    user_id = uuid.uuid4()

    async def scenario() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        longest = 0.0
        async with usage_table_locked(app):
            pending = asyncio.create_task(app.state.call_sink.record(make_outcome(DEFAULT, user_id)))
            last = loop.time()
            for _ in range(50):
                await asyncio.sleep(0.01)
                now = loop.time()
                longest, last = max(longest, now - last), now
            waited = not pending.done()
        await pending
        return waited, longest

    waited, longest_tick = metering_gateway.server.call_soon(scenario())
    # A loop blocked by the waiting record could not run the coroutine that holds the lock: it would
    # stall until the driver gave up (SQLite's busy timeout, 10 s; on PostgreSQL, never). Far more
    # than a busy machine's scheduling delays, which 0.2 s was not (0.3 s seen in a full run).
    assert waited and longest_tick < 5.0
    assert count_records(metering_gateway, user_id=user_id) == 1


@pytest.mark.skipif(backend() != "sqlite", reason="SQLite's write-ahead log")
def test_the_write_ahead_log_stays_bounded_under_one_record_batches(metering_gateway: Gateway) -> None:
    app = metering_gateway.app
    database = Path(make_url(metering_gateway.settings.database_url).database or "")
    wal = database.with_name(database.name + "-wal")

    async def scenario() -> None:
        writer = usage_writer(app.state.sessionmaker, {})
        writer.start()
        try:
            for _ in range(1500):  # one at a time: every batch holds one record
                await writer.record(make_outcome(DEFAULT, uuid.uuid4()))
        finally:
            await writer.close()

    metering_gateway.server.call_soon(scenario(), timeout=120)
    # Without checkpoints this would be about 9000 pages (six a record); SQLite's own limit is 1000.
    assert wal.stat().st_size // 4096 < 2500


@pytest.mark.skipif(backend() != "postgres", reason="PostgreSQL connections are a server's resource")
def test_the_insert_connection_is_closed_once_idle_and_reopened_when_needed(
    metering_gateway: Gateway,
) -> None:
    url = metering_gateway.settings.database_url
    user_id = uuid.uuid4()
    name = f"idle-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[int, int, int]:
        engine = make_engine(url, connect_args={"server_settings": {"application_name": name}})
        insert = PostgresBatchInsert(engine, TABLE, COLUMNS, idle_seconds=0.2)

        async def server_connections() -> int:
            async with metering_gateway.app.state.engine.connect() as conn:
                query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
                return int((await conn.execute(query, {"name": name})).scalar_one())

        try:
            await insert.insert([as_tuple(usage_row(user_id))])
            while_busy = await server_connections()
            # Closed once idle for 0.2 s: polled, since a busy machine may take longer to get there.
            deadline = asyncio.get_running_loop().time() + 10
            while (once_idle := await server_connections()) and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.05)
            await insert.insert([as_tuple(usage_row(user_id))])
            return while_busy, once_idle, await server_connections()
        finally:
            await insert.close()
            await engine.dispose()

    assert metering_gateway.server.call_soon(scenario()) == (1, 0, 1)
    assert count_records(metering_gateway, user_id=user_id) == 2
