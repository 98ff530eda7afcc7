"""The 0002 migration builds exactly the tables `auth/models.py` declares."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from switchboard.auth import models
from tests.support.gateway import Gateway


def test_the_migration_matches_the_models(gateway: Gateway) -> None:
    engine = gateway.app.state.engine

    def differences(connection: Any) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        found = compare_metadata(context, models.Base.metadata)
        return [d for d in found if "auth_" in repr(d)]

    async def compare() -> list[Any]:
        async with engine.connect() as connection:
            return list(await connection.run_sync(differences))

    assert gateway.server.call_soon(compare()) == []
