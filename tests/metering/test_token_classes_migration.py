"""Migration 0015 gives every usage record written before it 0 cache writes, 0 one-hour
writes, no service tier and no prices, keeps its cost, and gives the rollups a cache-write sum of 0;
its downgrade drops those columns and keeps every record."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy import Connection, inspect, text

from switchboard.db.engine import make_engine
from switchboard.db.migrate import alembic_config
from tests.support.databases import DatabaseFactory

AT = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
NEW_COLUMNS = {"cache_write_tokens", "cache_write_1h_tokens", "service_tier", "prices"}
ROLLUPS = ("usage_5min_rollups", "usage_rollups", "usage_daily_rollups")


def _old_record(connection: Connection, record_id: uuid.UUID) -> None:
    records = sa.table(
        "usage_records",
        *(sa.column(name) for name in ("request_id", "credential_scope", "provider", "model", "selector")),
        *(sa.column(name) for name in ("endpoint", "status", "input_per_mtok", "output_per_mtok")),
        sa.column("id", sa.Uuid()),
        sa.column("economy_id", sa.Uuid()),
        sa.column("user_id", sa.Uuid()),
        sa.column("occurred_at", sa.DateTime(timezone=True)),
        sa.column("stream", sa.Boolean()),
        sa.column("priced", sa.Boolean()),
        *(sa.column(name, sa.Integer()) for name in ("prompt_tokens", "completion_tokens", "cached_tokens")),
        *(sa.column(name, sa.Integer()) for name in ("reasoning_tokens", "markup_bps", "latency_ms")),
        sa.column("cost", sa.BigInteger()),
    )
    connection.execute(
        records.insert().values(
            id=record_id,
            request_id="req-old",
            occurred_at=AT,
            economy_id=uuid.uuid4(),
            user_id=uuid.uuid4(),
            credential_scope="user",
            provider="anthropic",
            model="claude-sonnet-4-5",
            selector="default",
            endpoint="/v1/messages",
            stream=False,
            status="ok",
            prompt_tokens=1000,
            completion_tokens=10,
            cached_tokens=600,
            reasoning_tokens=0,
            cost=3_150_000,
            priced=True,
            input_per_mtok="3",
            output_per_mtok="15",
            markup_bps=0,
            latency_ms=5,
        )
    )


def test_records_before_the_migration_have_no_cache_writes_and_no_prices(databases: DatabaseFactory) -> None:
    from alembic import command

    record_id = uuid.uuid4()

    def scenario(connection: Connection) -> None:
        command.upgrade(alembic_config(connection), "0014")
        _old_record(connection, record_id)
        command.upgrade(alembic_config(connection), "0015")
        row = connection.execute(
            text(
                "SELECT cache_write_tokens, cache_write_1h_tokens, service_tier, prices, cost, cached_tokens "
                "FROM usage_records"
            )
        ).one()
        assert tuple(row) == (0, 0, None, None, 3_150_000, 600)
        for table in ROLLUPS:
            assert "cache_write_tokens" in {c["name"] for c in inspect(connection).get_columns(table)}

        command.downgrade(alembic_config(connection), "0014")
        columns = {c["name"] for c in inspect(connection).get_columns("usage_records")}
        assert not columns & NEW_COLUMNS
        assert connection.execute(text("SELECT cost FROM usage_records")).scalar_one() == 3_150_000
        for table in ROLLUPS:
            assert "cache_write_tokens" not in {c["name"] for c in inspect(connection).get_columns(table)}

    async def run() -> None:
        engine = make_engine(await databases.create())
        try:
            async with engine.begin() as connection:
                await connection.run_sync(scenario)
        finally:
            await engine.dispose()

    asyncio.run(run())
