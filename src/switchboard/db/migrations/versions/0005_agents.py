"""Agents registry.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from switchboard.db.types import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_versions",
        sa.Column("row_id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("tier", sa.String(16), nullable=False),
        sa.Column("owner_id", sa.String(200), nullable=True),
        sa.Column("room_id", sa.Uuid(), nullable=True),
        sa.Column("economy_id", sa.Uuid(), nullable=True),
        sa.Column("author_id", sa.Uuid(), nullable=True),
        sa.Column("display_name", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("retired_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("row_id", name="pk_agent_versions"),
        sa.UniqueConstraint("agent_id", "version", name="uq_agent_versions_agent_id_version"),
    )
    op.create_index("ix_agent_versions_owner_id", "agent_versions", ["owner_id"])
    op.create_index("ix_agent_versions_room_id", "agent_versions", ["room_id"])
    op.create_index("ix_agent_versions_economy_id", "agent_versions", ["economy_id"])


def downgrade() -> None:
    op.drop_table("agent_versions")
