"""Token classes on usage records (SPEC §20): cache writes, one-hour writes, the service tier and the
prices applied; the rollups sum cache writes too.

Records written before keep their cost; they are backfilled with 0 cache writes and no prices (their
cost was computed from `input_per_mtok` and `output_per_mtok`, which they keep).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

ROLLUPS = ("usage_5min_rollups", "usage_rollups", "usage_daily_rollups")


def upgrade() -> None:
    op.add_column(
        "usage_records", sa.Column("cache_write_tokens", sa.Integer(), server_default="0", nullable=False)
    )
    op.add_column(
        "usage_records", sa.Column("cache_write_1h_tokens", sa.Integer(), server_default="0", nullable=False)
    )
    op.add_column("usage_records", sa.Column("service_tier", sa.String(32), nullable=True))
    op.add_column("usage_records", sa.Column("prices", sa.Text(), nullable=True))
    for table in ROLLUPS:
        op.add_column(
            table, sa.Column("cache_write_tokens", sa.BigInteger(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    for table in ROLLUPS:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("cache_write_tokens")
    with op.batch_alter_table("usage_records") as batch:
        for column in ("prices", "service_tier", "cache_write_1h_tokens", "cache_write_tokens"):
            batch.drop_column(column)
