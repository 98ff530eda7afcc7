"""The response cache (SPEC §23): its entries, and `cache_hit` on usage records.

Records written before were all answered by a provider: backfilled `cache_hit` false.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "usage_records", sa.Column("cache_hit", sa.Boolean(), server_default=sa.false(), nullable=False)
    )
    op.create_table(
        "response_cache",
        sa.Column("key", sa.LargeBinary(32), primary_key=True),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_response_cache_created_at", "response_cache", ["created_at"])
    op.create_index("ix_response_cache_expires_at", "response_cache", ["expires_at"])


def downgrade() -> None:
    op.drop_table("response_cache")
    with op.batch_alter_table("usage_records") as batch:
        batch.drop_column("cache_hit")
