"""Embedded auth: users, API keys, refresh tokens, delegation tokens.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
