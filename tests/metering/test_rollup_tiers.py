"""5-minute rollups and API keys in the rollups: the 0011 migration, limits' starting counts, repair now."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, select, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from switchboard.db.migrate import alembic_config
from switchboard.kit.clock import utcnow
from switchboard.metering.models import UsageFiveMinuteRollupRow, UsageRecordRow, UsageRollupRow
from switchboard.metering.rollup_check import differences, rebuild
from switchboard.metering.rollup_summary import counted_in_rollups
from switchboard.metering.rollups import NO_API_KEY, hour_of
from switchboard.metering.writer import UsageWriter
from tests.conftest import GatewayFactory
from tests.metering.conftest import EconomyFactory, make_outcome, metering_config, record
from tests.metering.test_rollups import BASE, _differences, _economy_id, _varied_outcomes
from tests.support.gateway import Gateway

R = UsageRecordRow
F = UsageFiveMinuteRollupRow


def _hourly_totals(gateway: Gateway, economy_id: uuid.UUID) -> dict[str, tuple[int, int]]:
    """Requests and cost per hour, whatever the key."""

    async def run() -> dict[str, tuple[int, int]]:
        async with gateway.app.state.sessionmaker() as session:
            rows = await session.execute(
                select(UsageRollupRow.hour, func.sum(UsageRollupRow.requests), func.sum(UsageRollupRow.cost))
                .where(UsageRollupRow.economy_id == economy_id)
                .group_by(UsageRollupRow.hour)
            )
            return {hour_of(row[0]).isoformat(): (int(row[1]), int(row[2])) for row in rows}

    return dict(gateway.server.call_soon(run()))


def test_the_0011_migration_splits_rollups_by_api_key_and_keeps_hours_whose_records_are_gone(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    gateway = make_gateway(config=metering_config(fake_provider.base_url))
    admin = gateway.user(role="Admin")
    created = admin.client.post("/economies", json={"slug": "split", "name": "Split"})
    economy_id = uuid.UUID(created.json()["id"])
    record(gateway, _varied_outcomes(economy_id, seed=31, count=300))
    purged_hour = BASE + timedelta(hours=3)

    async def purge_one_hour() -> None:
        """What retention leaves: an hour with rollups and no records (nor 5-minute rollups)."""
        async with gateway.app.state.sessionmaker() as session, session.begin():
            for table, column in ((R, R.occurred_at), (F, F.hour)):
                await session.execute(
                    delete(table).where(column >= purged_hour, column < purged_hour + timedelta(hours=1))
                )

    gateway.server.call_soon(purge_one_hour())
    before = _hourly_totals(gateway, economy_id)
    assert before[purged_hour.isoformat()][0] > 0

    async def migrate_again() -> None:
        from alembic import command

        def down_and_up(connection: Connection) -> None:
            command.downgrade(alembic_config(connection), "0010")  # no API keys, no 5-minute rollups
            command.upgrade(alembic_config(connection), "0011")
            command.upgrade(alembic_config(connection), "head")  # what the code reads today

        async with gateway.app.state.engine.begin() as connection:
            await connection.run_sync(down_and_up)

    gateway.server.call_soon(migrate_again(), timeout=60)
    assert _hourly_totals(gateway, economy_id) == before  # every hour's sums, the purged one's too

    async def differing_after_the_purged_day() -> list[Any]:
        async with gateway.app.state.sessionmaker() as session:
            start, end = BASE + timedelta(days=1), BASE + timedelta(days=4)
            return [d async for d in differences(session, economy_id, start, end)]

    # Every tier of the days with all their records is their records' sums, API keys included.
    assert gateway.server.call_soon(differing_after_the_purged_day(), timeout=60) == []

    async def keyed_requests() -> int:
        async with gateway.app.state.sessionmaker() as session:
            query = select(func.sum(UsageRollupRow.requests)).where(
                UsageRollupRow.economy_id == economy_id, UsageRollupRow.api_key_id != NO_API_KEY
            )
            return int(await session.scalar(query) or 0)

    assert gateway.server.call_soon(keyed_requests()) > 100


def test_limits_on_api_keys_and_users_start_from_the_rollups_with_the_records_counts(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    economy_id = _economy_id(make_economy)
    outcomes = _varied_outcomes(economy_id, seed=41, count=300)
    record(metering_gateway, outcomes)
    user = outcomes[0].user_id
    api_keys = sorted({o.api_key_id for o in outcomes if o.api_key_id is not None}, key=str)
    assert len(api_keys) == 2
    starts: list[datetime | None] = [None, BASE, BASE + timedelta(hours=13), BASE + timedelta(days=2)]
    cases = [
        (subject_type, subject, narrowed, metric, start)
        for subject_type, subject in [("api_key", api_keys[0]), ("api_key", api_keys[1]), ("user", user)]
        for narrowed in (None, economy_id)
        for metric in ("cost", "tokens", "requests")
        for start in starts
    ]

    async def compare() -> list[tuple[Any, ...]]:
        wrong = []
        async with metering_gateway.app.state.engine.connect() as conn:
            for subject_type, subject, narrowed, metric, start in cases:
                counted = await counted_in_rollups(conn, subject_type, subject, narrowed, metric, start)
                column = R.api_key_id if subject_type == "api_key" else R.user_id
                measure: Any = {
                    "cost": func.sum(R.cost),
                    "tokens": func.sum(R.prompt_tokens + R.completion_tokens),
                    "requests": func.count(),
                }[metric]
                query = select(func.coalesce(measure, 0)).where(column == subject, R.economy_id == economy_id)
                if start is not None:
                    query = query.where(R.occurred_at >= start)
                expected = int(await conn.scalar(query) or 0)
                if counted != expected or not expected:
                    wrong.append((subject_type, narrowed, metric, start, counted, expected))
        return wrong

    assert metering_gateway.server.call_soon(compare(), timeout=60) == []


async def _writer_waits_for_a_lock(gateway: Gateway) -> None:
    """PostgreSQL: until a lock on usage_records is awaited. SQLite: the write lock is simply held."""
    if gateway.app.state.engine.dialect.name != "postgresql":
        await asyncio.sleep(0.2)  # the writer is let run; it cannot commit while the rebuild holds the lock
        return
    waiting = text(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
        "WHERE c.relname = 'usage_records' AND NOT l.granted"
    )
    # A connection of its own: the gateway's small test budget may be taken by the rebuild and writer.
    watcher = create_async_engine(gateway.app.state.engine.url, poolclass=NullPool)
    try:
        async with watcher.connect() as conn:
            for _ in range(500):
                if await conn.scalar(waiting):
                    return
                await conn.rollback()
                await asyncio.sleep(0.02)
    finally:
        await watcher.dispose()
    raise AssertionError("the usage writer never waited for the rebuild")


def test_repair_of_the_current_hour_counts_a_record_written_while_it_rebuilds(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    economy_id = _economy_id(make_economy)
    admin = uuid.uuid4()
    now = utcnow()
    hour = hour_of(now)
    record(metering_gateway, [make_outcome(economy_id, admin, occurred_at=now) for _ in range(5)])
    writer: UsageWriter = metering_gateway.app.state.call_sink

    async def rebuild_while_a_call_ends() -> bool:
        async with metering_gateway.app.state.sessionmaker() as session, session.begin():
            await rebuild(session, economy_id, hour, hour + timedelta(hours=1))
            late = asyncio.create_task(writer.record(make_outcome(economy_id, uuid.uuid4(), occurred_at=now)))
            await _writer_waits_for_a_lock(metering_gateway)
            waited = not late.done()  # its record cannot commit before the rebuild does
        await late
        return waited

    assert metering_gateway.server.call_soon(rebuild_while_a_call_ends(), timeout=60)

    async def state() -> tuple[list[Any], int]:
        async with metering_gateway.app.state.sessionmaker() as session:
            found = [d async for d in differences(session, economy_id, hour, hour + timedelta(hours=1))]
            requests = await session.scalar(
                select(func.sum(UsageRollupRow.requests)).where(UsageRollupRow.economy_id == economy_id)
            )
            return found, int(requests or 0)

    assert metering_gateway.server.call_soon(state()) == ([], 6)
    assert _differences(metering_gateway, economy_id) == []
