"""Embedded auth: users, API keys, refresh tokens, delegation tokens.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _when(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "auth_users",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        _when("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_auth_users"),
        sa.UniqueConstraint("email", name="uq_auth_users_email"),
    )
    op.create_table(
        "auth_api_keys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("email", sa.String(320), nullable=True),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("permissions", sa.JSON(), nullable=False),
        sa.Column("service_name", sa.String(100), nullable=False),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("key_prefix", sa.String(16), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        _when("created_at"),
        _when("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_auth_api_keys"),
        sa.UniqueConstraint("key_hash", name="uq_auth_api_keys_key_hash"),
    )
    op.create_index("ix_auth_api_keys_user_id", "auth_api_keys", ["user_id"])
    op.create_table(
        "auth_refresh_families",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("api_key_id", sa.Uuid(), nullable=True),
        _when("created_at"),
        _when("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_auth_refresh_families"),
        sa.ForeignKeyConstraint(
            ["api_key_id"],
            ["auth_api_keys.id"],
            ondelete="CASCADE",
            name="fk_auth_refresh_families_api_key_id_auth_api_keys",
        ),
    )
    op.create_table(
        "auth_refresh_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("family_id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        _when("created_at"),
        _when("expires_at"),
        _when("used_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_auth_refresh_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_auth_refresh_tokens_token_hash"),
        sa.ForeignKeyConstraint(
            ["family_id"],
            ["auth_refresh_families.id"],
            ondelete="CASCADE",
            name="fk_auth_refresh_tokens_family_id_auth_refresh_families",
        ),
    )
    op.create_index("ix_auth_refresh_tokens_family_id", "auth_refresh_tokens", ["family_id"])
    op.create_table(
        "auth_delegation_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("room_id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.JSON(), nullable=False),
        _when("created_at"),
        _when("expires_at"),
        _when("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_auth_delegation_tokens"),
    )
    op.create_index("ix_auth_delegation_tokens_user_id", "auth_delegation_tokens", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_auth_delegation_tokens_user_id", table_name="auth_delegation_tokens")
    op.drop_table("auth_delegation_tokens")
    op.drop_index("ix_auth_refresh_tokens_family_id", table_name="auth_refresh_tokens")
    op.drop_table("auth_refresh_tokens")
    op.drop_table("auth_refresh_families")
    op.drop_index("ix_auth_api_keys_user_id", table_name="auth_api_keys")
    op.drop_table("auth_api_keys")
    op.drop_table("auth_users")
