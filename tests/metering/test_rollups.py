"""Hourly rollups: kept by every write path, equal to the records, and what summaries read."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from switchboard.db.base import Base
from switchboard.db.migrate import alembic_config
from switchboard.metering.models import (
    UsageDailyRollupRow,
    UsageFiveMinuteRollupRow,
    UsageRecordRow,
    UsageRollupRow,
)
from switchboard.metering.outcome import CallOutcome
from switchboard.metering.rollup_check import Difference, differences, rebuild
from switchboard.metering.rollup_summary import summarize_fast
from switchboard.metering.rollups import NO_AGENT, NO_ROOM, hour_of
from switchboard.metering.schemas import GroupBy, SummaryOut
from switchboard.metering.usage_queries import UsageFilter, summarize
from switchboard.metering.writer import UsageWriter
from switchboard.settlement.call import Settlement
from tests.conftest import GatewayFactory
from tests.metering.conftest import EconomyFactory, make_outcome, metering_config, record
from tests.support import gateway as support
from tests.support.gateway import Gateway

SWITCHBOARD = Path(sys.executable).with_name("switchboard")

GROUPS: tuple[GroupBy, ...] = ("day", "model", "user", "agent", "room")
BASE = datetime(2025, 3, 1, tzinfo=UTC)
MODELS = [("openai", "gpt-4o-mini"), ("anthropic", "claude-3-5-haiku-latest"), ("openai", "gpt-unpriced")]


def _varied_outcomes(
    economy_id: uuid.UUID, seed: int, count: int, start: datetime = BASE, seconds: int = 3 * 24 * 3600
) -> list[CallOutcome]:
    """Calls spread over three days (or `seconds` from `start`), across users, rooms, agents, models,
    statuses and API keys (nulls too)."""
    rng = random.Random(seed)
    users = [uuid.uuid4() for _ in range(4)]
    rooms = [None, uuid.uuid4(), uuid.uuid4()]
    agents = [None, "agent-a", "agent-b"]
    api_keys = [None, uuid.uuid4(), uuid.uuid4()]
    outcomes = []
    for _ in range(count):
        provider, model = rng.choice(MODELS)
        moment = start + timedelta(seconds=rng.randrange(seconds), microseconds=rng.randrange(10**6))
        outcomes.append(
            make_outcome(
                economy_id,
                rng.choice(users),
                occurred_at=moment,
                provider=provider,
                model=model,
                selector=f"{provider}/{model}",
                room_id=rng.choice(rooms),
                agent_id=rng.choice(agents),
                status=rng.choice(["ok", "ok", "ok", "error", "cancelled"]),
                prompt_tokens=rng.randrange(0, 5000),
                completion_tokens=rng.randrange(0, 2000),
                cached_tokens=rng.randrange(0, 100),
                reasoning_tokens=rng.randrange(0, 100),
                api_key_id=rng.choice(api_keys),
            )
        )
    return outcomes


def _economy_id(make_economy: EconomyFactory) -> uuid.UUID:
    return uuid.UUID(make_economy()["id"])


def _differences(gateway: Gateway, economy_id: uuid.UUID) -> list[Difference]:
    async def run() -> list[Difference]:
        async with gateway.app.state.sessionmaker() as session:
            start, end = BASE - timedelta(days=1), BASE + timedelta(days=5)
            return [d async for d in differences(session, economy_id, start, end)]

    return list(gateway.server.call_soon(run()))


def _rollup_requests(gateway: Gateway, economy_id: uuid.UUID) -> int:
    async def run() -> int:
        async with gateway.app.state.sessionmaker() as session:
            rows = await session.scalars(
                select(UsageRollupRow.requests).where(UsageRollupRow.economy_id == economy_id)
            )
            return sum(int(value) for value in rows)

    return int(gateway.server.call_soon(run()))


def test_summaries_from_rollups_equal_summaries_from_records_on_random_ranges_that_cut_hours(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    economy_id = _economy_id(make_economy)
    record(metering_gateway, _varied_outcomes(economy_id, seed=2121, count=600))
    # And a busy hour, several calls a minute: its 5-minute rollups sum several records each.
    busy = BASE + timedelta(days=1, hours=7)
    record(metering_gateway, _varied_outcomes(economy_id, seed=2122, count=400, start=busy, seconds=3600))
    rng = random.Random(21)
    ranges: list[tuple[datetime | None, datetime | None]] = [
        (None, None),
        (BASE, None),
        (None, BASE + timedelta(days=2)),
    ]
    for _ in range(25):
        start = BASE - timedelta(hours=2) + timedelta(seconds=rng.randrange(80 * 3600))
        ranges.append((start, start + timedelta(seconds=rng.randrange(1, 40 * 3600))))
    ranges.append(
        (BASE + timedelta(hours=5, minutes=10), BASE + timedelta(hours=5, minutes=50))
    )  # one hour's inside
    ranges.append((BASE + timedelta(hours=5), BASE + timedelta(hours=29)))  # whole hours only
    # Whole days in the middle (daily rollups), whole hours around them, partial hours at the ends.
    ranges.append((BASE + timedelta(hours=5, minutes=1), BASE + timedelta(days=2, hours=20, minutes=59)))
    ranges.append((BASE + timedelta(days=1), BASE + timedelta(days=3)))  # whole days only
    ranges.append((BASE + timedelta(days=1), None))
    ranges.append((None, BASE + timedelta(days=2, hours=3, seconds=1)))
    # Ranges that cut minutes of the busy hour, to the microsecond; whole 5 minutes; inside 5 minutes.
    for _ in range(25):
        start = busy - timedelta(minutes=5) + timedelta(microseconds=rng.randrange(70 * 60 * 10**6))
        ranges.append((start, start + timedelta(microseconds=rng.randrange(1, 90 * 60 * 10**6))))
    ranges.append((busy + timedelta(minutes=3), busy + timedelta(minutes=58)))
    ranges.append((busy + timedelta(minutes=5), busy + timedelta(minutes=55)))
    ranges.append((busy + timedelta(minutes=5), busy + timedelta(hours=1, minutes=10)))
    ranges.append((busy + timedelta(minutes=6), busy + timedelta(minutes=9)))
    ranges.append((busy + timedelta(minutes=3, seconds=10), busy + timedelta(minutes=3, seconds=50)))
    ranges.append((busy - timedelta(hours=2, minutes=1), busy + timedelta(days=1, minutes=59, seconds=1)))

    async def compare() -> list[tuple[Any, ...]]:
        mismatches = []
        async with metering_gateway.app.state.sessionmaker() as session:
            for start, end in ranges:
                usage = UsageFilter(economy_id=economy_id, start=start, end=end)
                for group_by in GROUPS:
                    fast: SummaryOut = await summarize_fast(session, usage, group_by)
                    slow: SummaryOut = await summarize(session, usage, group_by)
                    if fast != slow:
                        mismatches.append((start, end, group_by, fast, slow))
        return mismatches

    assert metering_gateway.server.call_soon(compare(), timeout=120) == []
    assert _rollup_requests(metering_gateway, economy_id) == 1000


def test_every_write_path_keeps_the_rollups_equal_to_the_records(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    economy_id = _economy_id(make_economy)
    writer: UsageWriter = metering_gateway.app.state.call_sink
    plain, settled, replayed = (_varied_outcomes(economy_id, seed, 60) for seed in (1, 2, 3))
    record(metering_gateway, plain)  # the plain batch insert

    async def settle_and_replay() -> None:
        # A settlement (even an empty one) takes the ledger's transaction; the spool replay goes by ids.
        await asyncio.gather(*(writer.record(outcome, Settlement()) for outcome in settled))
        spooled = [(uuid.uuid4(), outcome) for outcome in replayed]
        await writer._replay(spooled)
        # Replayed again, as after a commit whose acknowledgement was lost: nothing counts twice.
        await writer._replay(spooled)
        await writer._replay([*spooled[:3], (uuid.uuid4(), replayed[0])])

    metering_gateway.server.call_soon(settle_and_replay(), timeout=60)
    assert _differences(metering_gateway, economy_id) == []
    assert _rollup_requests(metering_gateway, economy_id) == 181


def test_the_migrated_rollup_table_matches_the_model(metering_gateway: Gateway) -> None:
    def compare(connection: Connection) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return [d for d in compare_metadata(context, Base.metadata) if "rollups" in repr(d)]

    async def run() -> list[Any]:
        async with metering_gateway.app.state.engine.connect() as connection:
            return list(await connection.run_sync(compare))

    assert metering_gateway.server.call_soon(run()) == []


def usage_cli(gateway: Gateway, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`switchboard usage …` in its own process, on the gateway's database."""
    environment = {
        **os.environ,
        "SWITCHBOARD_DATABASE_URL": gateway.settings.database_url,
        "SWITCHBOARD_DATA_DIR": str(tmp_path),
        "SWITCHBOARD_JWT_SECRET": support.TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": support.test_encryption_keys("k1"),
        "SWITCHBOARD_CONFIG": str(gateway.settings.config_path),
        **env,
    }
    return subprocess.run(
        [str(SWITCHBOARD), "usage", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_verify_reports_a_rollup_that_differs_and_repair_rebuilds_it(
    make_gateway: GatewayFactory, fake_provider: Any, tmp_path: Path
) -> None:
    # A database of its own: `verify --repair` reads every economy's hours, and the shared metering
    # gateway's database holds the whole session's (on PostgreSQL under load that took over 120 s).
    metering_gateway = make_gateway(config=metering_config(fake_provider.base_url))
    admin = metering_gateway.user(role="Admin")

    def make_economy() -> dict[str, Any]:
        body = {"slug": f"e-{uuid.uuid4().hex[:10]}", "name": "Test economy"}
        created = admin.client.post("/economies", json=body)
        assert created.status_code == 201, created.text
        return dict(created.json())

    economy, other = make_economy(), make_economy()
    economy_id = uuid.UUID(economy["id"])
    record(metering_gateway, _varied_outcomes(uuid.UUID(other["id"]), seed=8, count=20))
    record(metering_gateway, _varied_outcomes(economy_id, seed=7, count=50))
    verified = usage_cli(metering_gateway, tmp_path, "verify", "--economy", economy["slug"])
    assert verified.returncode == 0, verified.stderr
    assert "rollups match the records" in verified.stdout

    async def corrupt() -> None:
        """One record's cost changes behind the rollups' back; another hour loses one rollup row."""
        async with metering_gateway.app.state.sessionmaker() as session, session.begin():
            in_order = select(UsageRecordRow).where(UsageRecordRow.economy_id == economy_id)
            first, last = (await session.scalars(in_order.order_by(UsageRecordRow.occurred_at))).all()[::49]
            await session.execute(
                update(UsageRecordRow)
                .where(UsageRecordRow.id == first.id)
                .values(cost=UsageRecordRow.cost + 7)
            )
            await session.execute(
                delete(UsageRollupRow).where(
                    UsageRollupRow.economy_id == economy_id,
                    UsageRollupRow.hour == hour_of(last.occurred_at),
                    UsageRollupRow.user_id == last.user_id,
                    UsageRollupRow.room_id == (last.room_id or NO_ROOM),
                    UsageRollupRow.agent_id == (last.agent_id or NO_AGENT),
                    UsageRollupRow.model == last.model,
                    UsageRollupRow.status == last.status,
                    UsageRollupRow.api_key_id == (last.api_key_id or NO_ROOM),
                )
            )

    metering_gateway.server.call_soon(corrupt())
    differing = usage_cli(metering_gateway, tmp_path, "verify", "--economy", economy["slug"])
    assert differing.returncode == 1
    lines = differing.stdout.splitlines()
    assert len(lines) == 4
    assert any("rollups None" in line for line in lines)
    # The cost change shows in its 5 minutes', hour's and day's rows; the deleted row only in its hour's.
    assert sorted(line.split()[2] for line in lines) == ["5min", "day", "hour", "hour"]
    assert "4 rollup row(s) differ from their records" in differing.stderr
    # Every economy's (the other one of this database matches its records already).
    repaired = usage_cli(metering_gateway, tmp_path, "verify", "--repair")
    assert repaired.returncode == 0, repaired.stderr
    assert usage_cli(metering_gateway, tmp_path, "verify", "--economy", economy["slug"]).returncode == 0


def test_rebuild_from_records_is_what_the_writer_kept(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    economy_id = _economy_id(make_economy)
    record(metering_gateway, _varied_outcomes(economy_id, seed=11, count=120))

    async def rows() -> list[tuple[Any, ...]]:
        found = []
        async with metering_gateway.app.state.sessionmaker() as session:
            for table in (UsageFiveMinuteRollupRow, UsageRollupRow, UsageDailyRollupRow):
                result = await session.scalars(select(table).where(table.economy_id == economy_id))
                found += [
                    (table.__tablename__, str(r.hour), str(r.user_id), str(r.room_id), r.agent_id, r.model,
                     r.status, str(r.api_key_id), r.requests, r.cost)
                    for r in result.all()
                ]  # fmt: skip
        return sorted(found)

    async def rebuild_all() -> None:
        async with metering_gateway.app.state.sessionmaker() as session, session.begin():
            await rebuild(session, economy_id, BASE - timedelta(days=1), BASE + timedelta(days=5))

    kept = metering_gateway.server.call_soon(rows())
    metering_gateway.server.call_soon(rebuild_all())
    assert metering_gateway.server.call_soon(rows()) == kept
    assert len([row for row in kept if row[0] == "usage_rollups"]) > 100  # the keys really vary
    assert any(row[0] == "usage_daily_rollups" for row in kept)
    assert len([row for row in kept if row[0] == "usage_5min_rollups"]) > 100


def test_the_migration_fills_the_rollups_from_the_records_already_stored(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    gateway = make_gateway(config=metering_config(fake_provider.base_url))
    economy_id = uuid.UUID(gateway.user(role="Admin").client.post(
        "/economies", json={"slug": "migrated", "name": "Migrated"}
    ).json()["id"])  # fmt: skip
    record(gateway, _varied_outcomes(economy_id, seed=5, count=200))

    async def migrate_again() -> None:
        from alembic import command

        def down_and_up(connection: Connection) -> None:
            command.downgrade(alembic_config(connection), "0009")  # drops the rollups
            command.upgrade(alembic_config(connection), "head")  # creates and fills them

        async with gateway.app.state.engine.begin() as connection:
            await connection.run_sync(down_and_up)

    gateway.server.call_soon(migrate_again(), timeout=60)
    assert _rollup_requests(gateway, economy_id) == 200
    assert _differences(gateway, economy_id) == []
