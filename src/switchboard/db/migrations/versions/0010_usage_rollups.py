"""Hourly and daily rollups of the usage records, kept by the usage writer; filled here from the records.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _rollup_table(name: str) -> None:
    op.create_table(
        name,
        sa.Column("economy_id", sa.Uuid(), nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("room_id", sa.Uuid(), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False),
        sa.Column("reasoning_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.BigInteger(), nullable=False),
        sa.Column("unpriced_requests", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "economy_id",
            "hour",
            "user_id",
            "room_id",
            "agent_id",
            "provider",
            "model",
            "status",
            name=f"pk_{name}",
        ),
        sqlite_with_rowid=False,  # SQLite: rows in the primary key's B-tree (one tree per upsert)
    )


def _fill(name: str, period: str) -> None:
    """The records already stored, summed as the writer sums new ones (metering/rollups.py).

    Kept here rather than imported, so that this migration stays what it was.
    """
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        start = f"date_trunc('{period}', occurred_at, 'UTC')"
        no_room = "'00000000-0000-0000-0000-000000000000'::uuid"
    else:  # SQLite keeps times as "YYYY-MM-DD HH:MM:SS.ffffff" and UUIDs as 32 hex digits
        start = (
            "substr(occurred_at, 1, 13) || ':00:00.000000'"
            if period == "hour"
            else "substr(occurred_at, 1, 10) || ' 00:00:00.000000'"
        )
        no_room = "'" + "0" * 32 + "'"
    op.execute(
        sa.text(
            f"INSERT INTO {name} (economy_id, hour, user_id, room_id, agent_id, provider, model, "  # noqa: S608
            "status, requests, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost, "
            f"unpriced_requests) SELECT economy_id, {start}, user_id, coalesce(room_id, {no_room}), "
            "coalesce(agent_id, ''), provider, model, status, count(*), sum(prompt_tokens), "
            "sum(completion_tokens), sum(cached_tokens), sum(reasoning_tokens), sum(cost), "
            "sum(CASE WHEN priced THEN 0 ELSE 1 END) FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6, 7, 8"
        )
    )


def upgrade() -> None:
    # `hour`: the first moment of the period a row sums, an hour or a UTC day.
    for name, period in (("usage_rollups", "hour"), ("usage_daily_rollups", "day")):
        _rollup_table(name)
        _fill(name, period)


def downgrade() -> None:
    op.drop_table("usage_daily_rollups")
    op.drop_table("usage_rollups")
