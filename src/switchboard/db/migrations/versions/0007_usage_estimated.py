"""Usage records say when their tokens are the gateway's estimate.

Revision ID: 0007
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing records carry the provider's counts, or say usage_estimated in error_code.
    op.add_column(
        "usage_records",
        sa.Column("usage_estimated", sa.Boolean(), server_default=sa.false(), nullable=False),
    )


def downgrade() -> None:
    with op.batch_alter_table("usage_records") as batch:
        batch.drop_column("usage_estimated")
