"""Limit holds keyed by (limit, call), with no other index; on SQLite both ledger tables WITHOUT ROWID.

Every call under a limit inserts its holds and deletes them again when it settles. Each b-tree a
row lives in is one more page written per transaction: the holds had five (the table, its `id` key
and three indexes), and now have one on SQLite and two on PostgreSQL. The table only ever holds the
running calls' rows, so the upkeep's reads by lease or call scan a few rows.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0010"  # INTEGRATE: 0011
branch_labels = None
depends_on = None

_HOLD_COLUMNS = "call_id, limit_id, amount, lease_until, call"
_USAGE_COLUMNS = "limit_id, window_start, used, updated_at"


def _holds(name: str, *, keyed_by_limit: bool, key_name: str = "pk_limit_holds") -> None:
    key = (
        sa.PrimaryKeyConstraint("limit_id", "call_id", name=key_name)
        if keyed_by_limit
        else sa.PrimaryKeyConstraint("id", name=key_name)
    )
    op.create_table(
        name,
        *([] if keyed_by_limit else [sa.Column("id", sa.Uuid(), nullable=False)]),
        sa.Column("call_id", sa.String(64), nullable=False),
        sa.Column("limit_id", sa.Uuid(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("call", sa.JSON(), nullable=True),
        key,
        sqlite_with_rowid=not keyed_by_limit,
    )


def _usage(name: str, *, with_rowid: bool) -> None:
    op.create_table(
        name,
        sa.Column("limit_id", sa.Uuid(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("limit_id", "window_start", name="pk_limit_usage"),
        sqlite_with_rowid=with_rowid,
    )


def _copy(source: str, target: str, columns: str) -> None:
    op.execute(f"INSERT INTO {target} ({columns}) SELECT {columns} FROM {source}")  # noqa: S608


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # A table's rowid cannot be dropped in place: each table is made again and its rows copied.
        _holds("limit_holds_new", keyed_by_limit=True)
        _copy("limit_holds", "limit_holds_new", _HOLD_COLUMNS)
        op.drop_table("limit_holds")
        op.rename_table("limit_holds_new", "limit_holds")
        _usage("limit_usage_new", with_rowid=False)
        _copy("limit_usage", "limit_usage_new", _USAGE_COLUMNS)
        op.drop_table("limit_usage")
        op.rename_table("limit_usage_new", "limit_usage")
        return
    for index in ("ix_limit_holds_limit", "ix_limit_holds_call", "ix_limit_holds_lease"):
        op.drop_index(index, table_name="limit_holds")
    op.drop_constraint("pk_limit_holds", "limit_holds", type_="primary")
    op.drop_column("limit_holds", "id")
    op.create_primary_key("pk_limit_holds", "limit_holds", ["limit_id", "call_id"])


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    new_id = "lower(hex(randomblob(16)))" if sqlite else "gen_random_uuid()"
    # PostgreSQL's constraint names are unique per schema: the old key's name is given back below.
    _holds(
        "limit_holds_old", keyed_by_limit=False, key_name="pk_limit_holds" if sqlite else "pk_limit_holds_old"
    )
    op.execute(
        f"INSERT INTO limit_holds_old (id, {_HOLD_COLUMNS}) "  # noqa: S608
        f"SELECT {new_id}, {_HOLD_COLUMNS} FROM limit_holds"
    )
    op.drop_table("limit_holds")
    op.rename_table("limit_holds_old", "limit_holds")
    if not sqlite:
        op.execute("ALTER TABLE limit_holds RENAME CONSTRAINT pk_limit_holds_old TO pk_limit_holds")
    op.create_index("ix_limit_holds_limit", "limit_holds", ["limit_id", "lease_until"])
    op.create_index("ix_limit_holds_call", "limit_holds", ["call_id"])
    op.create_index("ix_limit_holds_lease", "limit_holds", ["lease_until"])
    if sqlite:
        _usage("limit_usage_old", with_rowid=True)
        _copy("limit_usage", "limit_usage_old", _USAGE_COLUMNS)
        op.drop_table("limit_usage")
        op.rename_table("limit_usage_old", "limit_usage")
