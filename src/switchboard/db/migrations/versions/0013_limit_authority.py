"""A limit remembers the authority level that set it (`limits.authority`, limits/authority.py): only
that level or above may change or delete it, so a room's or an economy's owners cannot lift a cap an
Admin put on them.

Backfill of the limits that exist (no record says what role their creator had when it was made):
- config-file limits and those made by `switchboard limits set` (no creator): `operator`;
- economy budgets: `admin` (budgets are set by Admins, or the config file);
- API limits whose creator is an embedded-auth account: that account's role (`superadmin`, `admin`),
  else `owner` if the creator owns the limit's economy or owns or manages its room today, else
  `admin`: only an Admin could have made a limit on a subject they neither own nor manage.
  An Admin who was also an owner gets `owner`; an owner who has since left gets `admin`.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_LIMITS = sa.table(
    "limits",
    sa.column("id", sa.Uuid()),
    sa.column("subject_type", sa.String()),
    sa.column("subject_id", sa.String()),
    sa.column("economy_id", sa.Uuid()),
    sa.column("managed_by", sa.String()),
    sa.column("created_by", sa.Uuid()),
    sa.column("authority", sa.String()),
)
_USERS = sa.table("auth_users", sa.column("id", sa.Uuid()), sa.column("role", sa.String()))
_PARTICIPANTS = sa.table(
    "economy_participants",
    sa.column("economy_id", sa.Uuid()),
    sa.column("participant_id", sa.Uuid()),
    sa.column("kind", sa.String()),
    sa.column("role", sa.String()),
)
_MEMBERS = sa.table(
    "room_members",
    sa.column("room_id", sa.Uuid()),
    sa.column("user_id", sa.Uuid()),
    sa.column("role", sa.String()),
)
_ROLES = {"SuperAdmin": "superadmin", "Admin": "admin"}


def upgrade() -> None:
    op.add_column("limits", sa.Column("authority", sa.String(16), server_default="owner", nullable=False))
    bind = op.get_bind()
    bind.execute(
        _LIMITS.update()
        .where((_LIMITS.c.managed_by == "config") | _LIMITS.c.created_by.is_(None))
        .values(authority="operator")
    )
    bind.execute(_LIMITS.update().where(_LIMITS.c.managed_by == "budget").values(authority="admin"))
    made = bind.execute(
        sa.select(_LIMITS).where(_LIMITS.c.managed_by == "api", _LIMITS.c.created_by.is_not(None))
    ).all()
    for row in made:
        level = _level(bind, row)
        if level != "owner":
            bind.execute(_LIMITS.update().where(_LIMITS.c.id == row.id).values(authority=level))


def _level(bind: sa.Connection, row: sa.Row[tuple[object, ...]]) -> str:
    role = bind.scalar(sa.select(_USERS.c.role).where(_USERS.c.id == row.created_by))
    if role in _ROLES:
        return _ROLES[role]
    economies = [row.economy_id] if row.economy_id is not None else []
    if row.subject_type == "economy":
        economies.append(uuid.UUID(row.subject_id))
    for economy_id in economies:
        owner = sa.select(_PARTICIPANTS.c.role).where(
            _PARTICIPANTS.c.economy_id == economy_id,
            _PARTICIPANTS.c.kind == "user",
            _PARTICIPANTS.c.participant_id == row.created_by,
        )
        if bind.scalar(owner) == "owner":
            return "owner"
    if row.subject_type == "room":
        member = sa.select(_MEMBERS.c.role).where(
            _MEMBERS.c.room_id == uuid.UUID(row.subject_id), _MEMBERS.c.user_id == row.created_by
        )
        if bind.scalar(member) in ("owner", "manager"):
            return "owner"
    return "admin"


def downgrade() -> None:
    with op.batch_alter_table("limits") as batch:
        batch.drop_column("authority")
