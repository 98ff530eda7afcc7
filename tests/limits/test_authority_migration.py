"""Migration 0013 gives every existing limit the authority level that set it (its docstring says how)."""

from __future__ import annotations

import asyncio
import importlib
import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy import Connection, text

from switchboard.db.engine import make_engine
from switchboard.db.migrate import alembic_config
from tests.support.databases import DatabaseFactory

MIGRATION = importlib.import_module("switchboard.db.migrations.versions.0013_limit_authority")
BEFORE = MIGRATION.down_revision
NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
LIMITS = sa.table(
    "limits",
    *(sa.column(name, sa.String()) for name in ("subject_type", "subject_id", "metric", "time_window")),
    *(sa.column(name, sa.String()) for name in ("amount", "managed_by")),
    sa.column("id", sa.Uuid()),
    sa.column("economy_id", sa.Uuid()),
    sa.column("allow_unpriced", sa.Boolean()),
    sa.column("created_by", sa.Uuid()),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)


def test_existing_limits_get_the_level_of_whoever_could_have_set_them(databases: DatabaseFactory) -> None:
    from alembic import command

    economy, room = uuid.uuid4(), uuid.uuid4()
    admin, superadmin, economy_owner, room_manager, gone = (uuid.uuid4() for _ in range(5))
    expected: dict[uuid.UUID, str] = {}

    def scenario(db: Connection) -> None:
        command.upgrade(alembic_config(db), BEFORE)

        def limit(level: str, subject_type: str, subject_id: str, **fields: object) -> None:
            limit_id = uuid.uuid4()
            expected[limit_id] = level
            values = {"managed_by": "api", "created_by": None, "economy_id": None, **fields}
            db.execute(
                LIMITS.insert().values(
                    id=limit_id,
                    subject_type=subject_type,
                    subject_id=subject_id,
                    metric="requests",
                    time_window=f"w{len(expected)}",
                    amount="10",
                    allow_unpriced=False,
                    created_at=NOW,
                    updated_at=NOW,
                    **values,
                )
            )

        stamps = {"created_at": NOW, "updated_at": NOW}
        db.execute(
            _table("economies", "slug", "name", "currency", "managed_by", "markup_bps", "price_overrides")
            .insert(),
            {"id": economy, "slug": "team", "name": "Team", "currency": "USD", "managed_by": "api",
             "markup_bps": 0, "price_overrides": {}, **stamps},
        )  # fmt: skip
        db.execute(
            _table("economy_participants", "economy_id", "participant_id", "kind", "role").insert(),
            {"economy_id": economy, "participant_id": economy_owner, "kind": "user", "role": "owner",
             "created_at": NOW},
        )  # fmt: skip
        db.execute(
            _table("rooms", "name", "created_by").insert(),
            {"id": room, "name": "room", "created_by": room_manager, **stamps},
        )
        db.execute(
            _table("room_members", "room_id", "user_id", "role", "added_by").insert(),
            {"room_id": room, "user_id": room_manager, "role": "manager", "added_by": room_manager, **stamps},
        )
        for user, role in ((admin, "Admin"), (superadmin, "SuperAdmin")):
            db.execute(
                _table("auth_users", "email", "role", "password_hash").insert(),
                {"id": user, "email": f"{role}@example.test", "role": role, "password_hash": "x",
                 "created_at": NOW},
            )  # fmt: skip
        limit("operator", "economy", str(economy), managed_by="config")
        limit("admin", "economy", str(economy), managed_by="budget")
        limit("operator", "room", str(room))  # `switchboard limits set`: no creator
        limit("admin", "room", str(room), created_by=admin)  # an account whose role says so
        limit("superadmin", "room", str(room), created_by=superadmin)
        limit("owner", "room", str(room), created_by=room_manager)
        limit("owner", "economy", str(economy), created_by=economy_owner)
        limit("owner", "user", str(gone), economy_id=economy, created_by=economy_owner)
        limit("admin", "room", str(room), created_by=gone)  # neither owner nor manager: an Admin's
        limit("admin", "user", str(admin), created_by=gone)

        command.upgrade(alembic_config(db), MIGRATION.revision)
        rows = db.execute(text("SELECT id, authority FROM limits")).all()
        assert {uuid.UUID(str(r[0])): r[1] for r in rows} == expected
        command.downgrade(alembic_config(db), BEFORE)
        assert db.execute(text("SELECT count(*) FROM limits")).scalar_one() == len(expected)

    async def run() -> None:
        engine = make_engine(await databases.create())
        try:
            async with engine.begin() as db:
                await db.run_sync(scenario)
        finally:
            await engine.dispose()

    asyncio.run(run())


_UUIDS = {"id", "economy_id", "participant_id", "created_by", "room_id", "user_id", "added_by"}
_TYPES = {"price_overrides": sa.JSON(), "markup_bps": sa.Integer()}


def _table(name: str, *columns: str) -> sa.TableClause:
    """A table as a test inserts into it: ids as sa.Uuid (each dialect's form), times with a zone."""
    names = ["id", *columns, "created_at", "updated_at"] if "id" not in columns else list(columns)
    made = []
    for column in dict.fromkeys(names):
        if column in _UUIDS:
            made.append(sa.column(column, sa.Uuid()))
        elif column.endswith("_at"):
            made.append(sa.column(column, sa.DateTime(timezone=True)))
        else:
            made.append(sa.column(column, _TYPES.get(column, sa.String())))
    return sa.table(name, *made)
