"""The audit trail (SPEC §22): hash-chained events and the chain head every append locks.

The head starts at sequence 0 with the genesis hash (64 zeros), so the first event's `prev_hash` is it.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column(
            "seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=False
        ),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor_user_id", sa.String(64), nullable=True),
        sa.Column("actor_role", sa.String(32), nullable=True),
        sa.Column("actor_auth_method", sa.String(32), nullable=False),
        sa.Column("actor_api_key_id", sa.String(64), nullable=True),
        sa.Column("actor_delegation_token_id", sa.String(64), nullable=True),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target_type", sa.String(32), nullable=False),
        sa.Column("target_id", sa.String(200), nullable=True),
        sa.Column("changes", sa.Text(), nullable=False),
        sa.Column("request_id", sa.String(128), nullable=True),
        sa.Column("ip", sa.String(64), nullable=True),
        sa.Column("economy_id", sa.String(64), nullable=True),
        sa.Column("room_id", sa.String(64), nullable=True),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_audit_events"),
        sa.UniqueConstraint("id", name="uq_audit_events_id"),
    )
    op.create_index("ix_audit_events_at", "audit_events", ["at"])
    op.create_index("ix_audit_events_action", "audit_events", ["action"])
    op.create_index("ix_audit_events_target", "audit_events", ["target_type", "target_id"])
    op.create_index("ix_audit_events_actor_user_id", "audit_events", ["actor_user_id"])
    op.create_index("ix_audit_events_economy_id", "audit_events", ["economy_id"])
    op.create_index("ix_audit_events_room_id", "audit_events", ["room_id"])
    head = op.create_table(
        "audit_chain_head",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_chain_head"),
    )
    op.bulk_insert(head, [{"id": 1, "seq": 0, "hash": "0" * 64}])


def downgrade() -> None:
    op.drop_table("audit_chain_head")
    op.drop_table("audit_events")
