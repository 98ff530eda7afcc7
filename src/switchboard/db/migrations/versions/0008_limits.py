"""Spend and rate limits (SPEC §13): limits, their counters and holds; api key and call on records/claims.

Economies that already have a budget get its cost/month limit (the backfill).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _budget_limit_id(economy_id: uuid.UUID) -> uuid.UUID:
    # Same as switchboard.limits.budgets.budget_limit_id; a migration must not import the app.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:budget:{economy_id}")


def upgrade() -> None:
    limits = op.create_table(
        "limits",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("subject_type", sa.String(16), nullable=False),
        sa.Column("subject_id", sa.String(64), nullable=False),
        sa.Column("economy_id", sa.Uuid(), nullable=True),
        sa.Column("metric", sa.String(16), nullable=False),
        sa.Column("time_window", sa.String(16), nullable=False),
        sa.Column("amount", sa.String(40), nullable=False),
        sa.Column("allow_unpriced", sa.Boolean(), nullable=False),
        sa.Column("managed_by", sa.String(16), nullable=False),
        sa.Column("created_by", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_limits"),
    )
    op.create_index("ix_limits_subject", "limits", ["subject_type", "subject_id"])
    op.create_table(
        "limit_usage",
        sa.Column("limit_id", sa.Uuid(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("limit_id", "window_start", name="pk_limit_usage"),
    )
    op.create_table(
        "limit_holds",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("call_id", sa.String(64), nullable=False),
        sa.Column("limit_id", sa.Uuid(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("call", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_limit_holds"),
    )
    op.create_index("ix_limit_holds_limit", "limit_holds", ["limit_id", "lease_until"])
    op.create_index("ix_limit_holds_call", "limit_holds", ["call_id"])
    op.create_index("ix_limit_holds_lease", "limit_holds", ["lease_until"])
    op.add_column("usage_records", sa.Column("api_key_id", sa.Uuid(), nullable=True))
    op.add_column("idempotency_keys", sa.Column("call", sa.JSON(), nullable=True))

    economies = sa.table("economies", sa.column("id", sa.Uuid()), sa.column("budget", sa.String()))
    now = datetime.now(UTC)
    rows = [
        {
            "id": _budget_limit_id(economy_id),
            "subject_type": "economy",
            "subject_id": str(economy_id),
            "economy_id": None,
            "metric": "cost",
            "time_window": "month",
            "amount": budget,
            "allow_unpriced": False,
            "managed_by": "budget",
            "created_by": None,
            "created_at": now,
            "updated_at": now,
        }
        for economy_id, budget in op.get_bind().execute(
            sa.select(economies.c.id, economies.c.budget).where(economies.c.budget.is_not(None))
        )
    ]
    if rows:
        op.bulk_insert(limits, rows)


def downgrade() -> None:
    with op.batch_alter_table("idempotency_keys") as batch:
        batch.drop_column("call")
    with op.batch_alter_table("usage_records") as batch:
        batch.drop_column("api_key_id")
    op.drop_table("limit_holds")
    op.drop_table("limit_usage")
    op.drop_index("ix_limits_subject", table_name="limits")
    op.drop_table("limits")
