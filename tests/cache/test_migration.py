"""Migration 0016 gives every usage record written before it `cache_hit` false and creates the
response_cache table; its downgrade drops both and keeps every record."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import Connection, inspect, text

from switchboard.db.engine import make_engine
from switchboard.db.migrate import alembic_config
from tests.metering.test_token_classes_migration import _old_record
from tests.support.databases import DatabaseFactory


def test_records_before_the_migration_were_no_cache_hits(databases: DatabaseFactory) -> None:
    from alembic import command

    def scenario(connection: Connection) -> None:
        command.upgrade(alembic_config(connection), "0017")
        _old_record(connection, uuid.uuid4())
        command.upgrade(alembic_config(connection), "0018")
        row = connection.execute(text("SELECT cache_hit, cost FROM usage_records")).one()
        assert tuple(row) == (False, 3_150_000)
        assert "response_cache" in inspect(connection).get_table_names()

        command.downgrade(alembic_config(connection), "0017")
        columns = {c["name"] for c in inspect(connection).get_columns("usage_records")}
        assert "cache_hit" not in columns
        assert "response_cache" not in inspect(connection).get_table_names()
        assert connection.execute(text("SELECT cost FROM usage_records")).scalar_one() == 3_150_000

    async def run() -> None:
        engine = make_engine(await databases.create())
        try:
            async with engine.begin() as connection:
                await connection.run_sync(scenario)
        finally:
            await engine.dispose()

    asyncio.run(run())
