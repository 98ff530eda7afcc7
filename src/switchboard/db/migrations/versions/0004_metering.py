"""Economies, participants and usage records.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "economies",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("slug", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.Column("markup_bps", sa.Integer(), nullable=False),
        sa.Column("price_overrides", sa.JSON(), nullable=False),
        sa.Column("budget", sa.String(40), nullable=True),
        sa.Column("managed_by", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_economies"),
        sa.UniqueConstraint("slug", name="uq_economies_slug"),
    )
    op.create_table(
        "economy_participants",
        sa.Column("economy_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("role", sa.String(8), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["economy_id"],
            ["economies.id"],
            ondelete="CASCADE",
            name="fk_economy_participants_economy_id_economies",
        ),
        sa.PrimaryKeyConstraint("economy_id", "participant_id", name="pk_economy_participants"),
    )
    op.create_index("ix_economy_participants_participant_id", "economy_participants", ["participant_id"])
    op.create_table(
        "usage_records",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("request_id", sa.String(128), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("economy_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("room_id", sa.Uuid(), nullable=True),
        sa.Column("agent_id", sa.String(64), nullable=True),
        sa.Column("session_id", sa.String(128), nullable=True),
        sa.Column("credential_id", sa.Uuid(), nullable=True),
        sa.Column("credential_scope", sa.String(16), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("selector", sa.String(300), nullable=False),
        sa.Column("endpoint", sa.String(64), nullable=False),
        sa.Column("stream", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cached_tokens", sa.Integer(), nullable=False),
        sa.Column("reasoning_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.BigInteger(), nullable=False),
        sa.Column("priced", sa.Boolean(), nullable=False),
        sa.Column("input_per_mtok", sa.String(40), nullable=True),
        sa.Column("output_per_mtok", sa.String(40), nullable=True),
        sa.Column("markup_bps", sa.Integer(), nullable=False),
        sa.Column("price_source", sa.String(40), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("ttft_ms", sa.Integer(), nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_usage_records"),
    )
    op.create_index("ix_usage_records_economy_time", "usage_records", ["economy_id", "occurred_at", "id"])
    op.create_index("ix_usage_records_user_time", "usage_records", ["user_id", "occurred_at", "id"])
    op.create_index("ix_usage_records_agent_session", "usage_records", ["agent_id", "session_id"])


def downgrade() -> None:
    op.drop_table("usage_records")
    op.drop_table("economy_participants")
    op.drop_table("economies")
