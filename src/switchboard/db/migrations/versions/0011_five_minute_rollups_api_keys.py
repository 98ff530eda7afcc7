"""5-minute rollups (filled from the records), and the API key as one more part of every rollup's key.

The hourly and daily rows already stored keep their sums: the part of each that records with an API
key account for moves to rows of its own, and what is left (calls made with a token, and the calls
of hours whose records retention deleted) stays under the nil key. Totals never change.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

NIL = "00000000-0000-0000-0000-000000000000"
OLD_KEY = ("economy_id", "hour", "user_id", "room_id", "agent_id", "provider", "model", "status")
NEW_KEY = (*OLD_KEY, "api_key_id")
MEASURES = ("requests", "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost",
            "unpriced_requests")  # fmt: skip
# Each table of the hourly and daily tiers, and the period its `hour` column starts.
OLD_TIERS = (("usage_rollups", "hour"), ("usage_daily_rollups", "day"))


def _postgres() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")


def _rollup_table(name: str, key: tuple[str, ...], pk_name: str) -> None:
    key_types: dict[str, Any] = {
        "economy_id": sa.Uuid(),
        "hour": sa.DateTime(timezone=True),
        "user_id": sa.Uuid(),
        "room_id": sa.Uuid(),
        "agent_id": sa.String(64),
        "provider": sa.String(32),
        "model": sa.String(200),
        "status": sa.String(16),
        "api_key_id": sa.Uuid(),
    }
    op.create_table(
        name,
        *(sa.Column(column, key_types[column], nullable=False) for column in key),
        *(sa.Column(column, sa.BigInteger(), nullable=False) for column in MEASURES),
        sa.PrimaryKeyConstraint(*key, name=pk_name),
        sqlite_with_rowid=False,  # SQLite: rows in the primary key's B-tree (one tree per upsert)
    )


def _nil() -> str:
    return f"'{NIL}'::uuid" if _postgres() else "'" + "0" * 32 + "'"  # SQLite: UUIDs as 32 hex digits


def _start(period: str) -> str:
    """The first moment of the record's period, as the rollups' `hour` holds it."""
    if _postgres():
        if period == "5min":
            minute = "extract(minute FROM occurred_at AT TIME ZONE 'UTC')::int"
            return f"(date_trunc('minute', occurred_at, 'UTC') - ({minute} % 5) * interval '1 minute')"
        return f"date_trunc('{period}', occurred_at, 'UTC')"
    # SQLite keeps times as "YYYY-MM-DD HH:MM:SS.ffffff": the period's start is a prefix and zeros
    # (op.execute would read `:00` as a parameter: the colons are escaped).
    if period == "5min":
        minutes = "CAST(substr(occurred_at, 16, 1) AS INTEGER) / 5 * 5"
        return f"substr(occurred_at, 1, 15) || ({minutes}) || '\\:00.000000'"
    if period == "hour":
        return "substr(occurred_at, 1, 13) || '\\:00\\:00.000000'"
    return "substr(occurred_at, 1, 10) || ' 00\\:00\\:00.000000'"


def _summed(period: str, where: str) -> str:
    """The records of `where`, summed per new key and `period` (as metering/rollups.py sums them)."""
    return (
        f"SELECT economy_id AS economy_id, {_start(period)} AS hour, user_id AS user_id, "  # noqa: S608
        f"coalesce(room_id, {_nil()}) AS room_id, coalesce(agent_id, '') AS agent_id, "
        f"provider AS provider, model AS model, status AS status, "
        f"coalesce(api_key_id, {_nil()}) AS api_key_id, count(*) AS requests, "
        "sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens, "
        "sum(cached_tokens) AS cached_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost) AS cost, "
        f"sum(CASE WHEN priced THEN 0 ELSE 1 END) AS unpriced_requests FROM usage_records WHERE {where} "
        "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
    )


def _replace(name: str, key: tuple[str, ...], select_sql: str) -> None:
    """`name` recreated with primary key `key` and filled by `select_sql` (its columns in key order)."""
    pk = f"pk_{name}"
    _rollup_table(f"{name}_next", key, f"{pk}_next" if _postgres() else pk)
    columns = ", ".join((*key, *MEASURES))
    op.execute(f"INSERT INTO {name}_next ({columns}) {select_sql}")
    op.drop_table(name)
    op.rename_table(f"{name}_next", name)
    if _postgres():  # a primary key's name is its index's, unique in the schema
        op.execute(f"ALTER TABLE {name} RENAME CONSTRAINT {pk}_next TO {pk}")


def _split_by_api_key(name: str, period: str) -> None:
    """Move what records with an API key add up to from the nil-key rows to rows of their own."""
    op.execute(f"CREATE TEMPORARY TABLE keyed_sums AS {_summed(period, 'api_key_id IS NOT NULL')}")
    columns = ", ".join((*NEW_KEY, *MEASURES))
    op.execute(f"INSERT INTO {name} ({columns}) SELECT {columns} FROM keyed_sums")  # noqa: S608
    sums = ", ".join(f"sum({column}) AS {column}" for column in MEASURES)
    old_key = ", ".join(OLD_KEY)
    assignments = ", ".join(f"{column} = r.{column} - s.{column}" for column in MEASURES)
    matches = " AND ".join(f"r.{column} = s.{column}" for column in OLD_KEY)
    per_old_key = f"SELECT {old_key}, {sums} FROM keyed_sums GROUP BY {old_key}"  # noqa: S608
    op.execute(
        f"UPDATE {name} AS r SET {assignments} FROM ({per_old_key}) AS s "  # noqa: S608
        f"WHERE {matches} AND r.api_key_id = {_nil()}"
    )
    op.execute(
        f"DELETE FROM {name} WHERE api_key_id = {_nil()} AND "  # noqa: S608
        + " AND ".join(f"{column} = 0" for column in MEASURES)
    )
    op.execute("DROP TABLE keyed_sums")


def upgrade() -> None:
    _rollup_table("usage_5min_rollups", NEW_KEY, "pk_usage_5min_rollups")
    columns = ", ".join((*NEW_KEY, *MEASURES))
    op.execute(f"INSERT INTO usage_5min_rollups ({columns}) {_summed('5min', '1 = 1')}")
    old_columns = ", ".join(OLD_KEY)
    for name, period in OLD_TIERS:
        _replace(name, NEW_KEY, f"SELECT {old_columns}, {_nil()}, {', '.join(MEASURES)} FROM {name}")  # noqa: S608
        _split_by_api_key(name, period)


def downgrade() -> None:
    op.drop_table("usage_5min_rollups")
    old_columns = ", ".join(OLD_KEY)
    sums = ", ".join(f"sum({column})" for column in MEASURES)
    for name, _ in OLD_TIERS:
        _replace(name, OLD_KEY, f"SELECT {old_columns}, {sums} FROM {name} GROUP BY {old_columns}")  # noqa: S608
