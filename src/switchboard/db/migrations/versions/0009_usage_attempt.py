"""Usage records number a call's attempts (SPEC §14): one record per attempt, sharing the request id.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every record written before routing was its call's one and only attempt.
    op.add_column("usage_records", sa.Column("attempt", sa.Integer(), server_default="1", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("usage_records") as batch:
        batch.drop_column("attempt")
