"""A credential's provider column as wide as the longest litellm provider name.

`llm_credentials.provider` was 16 characters, but SPEC §15 lets a credential name any litellm
provider, and some names are longer (`docker_model_runner`, `text-completion-codestral`: 25). On
PostgreSQL storing one failed with a 500; SQLite never enforced the length. 32, as usage records have.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":  # SQLite does not enforce a VARCHAR's length
        op.alter_column("llm_credentials", "provider", type_=sa.String(32), existing_nullable=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("llm_credentials", "provider", type_=sa.String(16), existing_nullable=False)
