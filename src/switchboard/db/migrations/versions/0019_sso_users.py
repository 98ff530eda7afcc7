"""Single sign-on (SPEC §24): users known by (issuer, subject), who may have no password and no
email; and the pending console sign-ins (`state`, single use) with their one-time session tickets.

Existing users are password accounts: they keep their email and password and get no issuer.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("auth_users") as batch:
        batch.alter_column("email", existing_type=sa.String(320), nullable=True)
        batch.alter_column("password_hash", existing_type=sa.String(255), nullable=True)
        batch.add_column(sa.Column("oidc_issuer", sa.String(512), nullable=True))
        batch.add_column(sa.Column("oidc_subject", sa.String(255), nullable=True))
        batch.create_unique_constraint("uq_auth_users_oidc", ["oidc_issuer", "oidc_subject"])
    op.create_table(
        "auth_sso_logins",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("state_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("user_id", sa.Uuid(), nullable=True),
        sa.Column("ticket_hash", sa.String(64), nullable=True),
        sa.Column("ticket_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_auth_sso_logins"),
        sa.UniqueConstraint("state_hash", name="uq_auth_sso_logins_state_hash"),
        sa.UniqueConstraint("ticket_hash", name="uq_auth_sso_logins_ticket_hash"),
    )
    op.create_index("ix_auth_sso_logins_created_at", "auth_sso_logins", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_auth_sso_logins_created_at", "auth_sso_logins")
    op.drop_table("auth_sso_logins")
    op.execute("DELETE FROM auth_users WHERE password_hash IS NULL OR email IS NULL")
    with op.batch_alter_table("auth_users") as batch:
        batch.drop_constraint("uq_auth_users_oidc", type_="unique")
        batch.drop_column("oidc_subject")
        batch.drop_column("oidc_issuer")
        batch.alter_column("password_hash", existing_type=sa.String(255), nullable=False)
        batch.alter_column("email", existing_type=sa.String(320), nullable=False)
