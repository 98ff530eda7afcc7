"""Rooms, members and LLM credentials.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rooms",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("default_economy_id", sa.Uuid(), nullable=True),
        sa.Column("created_by", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_rooms"),
    )
    op.create_table(
        "room_members",
        sa.Column("room_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("added_by", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('owner', 'manager', 'member', 'viewer')", name="ck_room_members_role"),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_room_members_room_id_rooms", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("room_id", "user_id", name="pk_room_members"),
    )
    op.create_index("ix_room_members_user_id", "room_members", ["user_id"])
    op.create_table(
        "llm_credentials",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("provider", sa.String(16), nullable=False),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("room_id", sa.Uuid(), nullable=True),
        sa.Column("label", sa.String(200), nullable=True),
        sa.Column("base_url", sa.String(2048), nullable=True),
        sa.Column("secret_hint", sa.String(4), nullable=False),
        sa.Column("sealed_secret", sa.LargeBinary(), nullable=False),
        sa.Column("created_by", sa.Uuid(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("scope IN ('user', 'room')", name="ck_llm_credentials_scope"),
        sa.CheckConstraint(
            "(scope = 'user' AND user_id IS NOT NULL AND room_id IS NULL)"
            " OR (scope = 'room' AND room_id IS NOT NULL AND user_id IS NULL)",
            name="ck_llm_credentials_owner",
        ),
        sa.ForeignKeyConstraint(
            ["room_id"], ["rooms.id"], name="fk_llm_credentials_room_id_rooms", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_llm_credentials"),
    )
    op.create_index("ix_llm_credentials_user_id", "llm_credentials", ["user_id"])
    op.create_index("ix_llm_credentials_room_id", "llm_credentials", ["room_id"])


def downgrade() -> None:
    op.drop_index("ix_llm_credentials_room_id", table_name="llm_credentials")
    op.drop_index("ix_llm_credentials_user_id", table_name="llm_credentials")
    op.drop_table("llm_credentials")
    op.drop_index("ix_room_members_user_id", table_name="room_members")
    op.drop_table("room_members")
    op.drop_table("rooms")
