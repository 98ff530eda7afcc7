"""The 0004 migration creates exactly the tables, columns and indexes the metering models declare."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Connection

from switchboard.db.base import Base
from switchboard.metering import models
from tests.support.gateway import Gateway

TABLES = {
    models.EconomyRow.__tablename__,
    models.ParticipantRow.__tablename__,
    models.UsageRecordRow.__tablename__,
}


def _table_of(diff: Any) -> str | None:
    item = diff[0] if isinstance(diff, list) else diff
    for part in item[1:]:
        name = getattr(part, "name", None) if not isinstance(part, str) else None
        table = getattr(part, "table", None)
        if table is not None:
            return str(table.name)
        if name in TABLES:
            return str(name)
        if isinstance(part, str) and part in TABLES:
            return part
    return None


def test_migrated_metering_tables_match_the_models(metering_gateway: Gateway) -> None:
    def compare(connection: Connection) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async def run() -> list[Any]:
        async with metering_gateway.app.state.engine.connect() as connection:
            return list(await connection.run_sync(compare))

    differences = [d for d in metering_gateway.server.call_soon(run()) if _table_of(d) in TABLES]
    assert differences == []
