"""Migration 0012 keys limit holds by (limit, call) and drops their other indexes, keeping every hold
and counter a running gateway had; its downgrade gives the old table back with the same rows."""

from __future__ import annotations

import asyncio
import importlib
import json
import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy import Connection, inspect, text

from switchboard.db.engine import make_engine
from switchboard.db.migrate import alembic_config
from tests.support.databases import DatabaseFactory

BEFORE = importlib.import_module("switchboard.db.migrations.versions.0012_limit_holds_by_limit").down_revision
LIMIT, CALL = uuid.uuid4(), uuid.uuid4().hex
LEASE = datetime(2026, 11, 25, 10, 0, 0, 123456, tzinfo=UTC)


def _holds(connection: Connection) -> list[tuple[str, str, int, str]]:
    rows = connection.execute(text("SELECT call_id, limit_id, amount, call FROM limit_holds")).all()
    return [(r[0], str(uuid.UUID(str(r[1]))), int(r[2]), json.loads(r[3]) if isinstance(r[3], str) else r[3])
            for r in rows]  # fmt: skip


def _usage(connection: Connection) -> list[tuple[str, int]]:
    rows = connection.execute(text("SELECT limit_id, used FROM limit_usage")).all()
    return [(str(uuid.UUID(str(r[0]))), int(r[1])) for r in rows]


def reserve_functions(connection: Connection) -> int:
    """PostgreSQL's one-statement reservation (none on SQLite)."""
    if connection.dialect.name == "sqlite":
        return 0
    query = text("SELECT count(*) FROM pg_proc WHERE proname = 'switchboard_reserve'")
    return int(connection.execute(query).scalar_one())


def test_holds_and_counters_survive_the_upgrade_and_the_downgrade(databases: DatabaseFactory) -> None:
    from alembic import command

    def scenario(connection: Connection) -> None:
        sqlite = connection.dialect.name == "sqlite"
        command.upgrade(alembic_config(connection), BEFORE)
        old_holds = sa.table(
            "limit_holds",
            sa.column("id", sa.Uuid()),
            sa.column("call_id", sa.String()),
            sa.column("limit_id", sa.Uuid()),
            sa.column("amount", sa.BigInteger()),
            sa.column("lease_until", sa.DateTime(timezone=True)),
            sa.column("call", sa.JSON()),
        )
        usage = sa.table(
            "limit_usage",
            sa.column("limit_id", sa.Uuid()),
            sa.column("window_start", sa.DateTime(timezone=True)),
            sa.column("used", sa.BigInteger()),
            sa.column("updated_at", sa.DateTime(timezone=True)),
        )
        connection.execute(
            old_holds.insert().values(
                id=uuid.uuid4(),
                call_id=CALL,
                limit_id=LIMIT,
                amount=7,
                lease_until=LEASE,
                call={"model": "m"},
            )
        )
        connection.execute(
            usage.insert().values(limit_id=LIMIT, window_start=LEASE, used=42, updated_at=LEASE)
        )
        before = (_holds(connection), _usage(connection))

        command.upgrade(alembic_config(connection), "0012")
        assert (_holds(connection), _usage(connection)) == before
        holds = inspect(connection)
        assert "id" not in {column["name"] for column in holds.get_columns("limit_holds")}
        assert holds.get_pk_constraint("limit_holds")["constrained_columns"] == ["limit_id", "call_id"]
        assert holds.get_indexes("limit_holds") == []
        assert reserve_functions(connection) == (0 if sqlite else 1)
        if sqlite:
            for table in ("limit_holds", "limit_usage"):
                sql = connection.execute(
                    text("SELECT sql FROM sqlite_master WHERE name = :table"), {"table": table}
                ).scalar_one()
                assert "WITHOUT ROWID" in sql

        command.downgrade(alembic_config(connection), BEFORE)
        assert (_holds(connection), _usage(connection)) == before
        old = inspect(connection)
        assert old.get_pk_constraint("limit_holds")["constrained_columns"] == ["id"]
        assert {index["name"] for index in old.get_indexes("limit_holds")} == {
            "ix_limit_holds_limit", "ix_limit_holds_call", "ix_limit_holds_lease"
        }  # fmt: skip
        assert connection.execute(text("SELECT id FROM limit_holds")).scalar_one() is not None
        assert reserve_functions(connection) == 0

    async def run() -> None:
        engine = make_engine(await databases.create())
        try:
            async with engine.begin() as connection:
                await connection.run_sync(scenario)
        finally:
            await engine.dispose()

    asyncio.run(run())
