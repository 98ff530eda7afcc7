"""Whose email a caller may read (GET /users): the console names people by email, not by id.

An email is personal: a caller reads their own, an Admin reads anyone's, and others read the emails
of people they already work with by id: fellow members of one of their rooms (the member list shows
them anyway) and the user participants of an economy they own (whose usage they read per user).
Anyone else is left out of the answer, exactly as an unknown id is, so the answer never tells
whether an id belongs to someone.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import User
from switchboard.auth.principal import Principal
from switchboard.auth.schemas import UserOut
from switchboard.errors import ValidationFailed

MAX_IDS = 100


async def _colleagues(session: AsyncSession, principal: Principal, ids: set[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `ids` who share a room with the caller or take part in an economy the caller owns."""
    # The rooms and economies domains own these tables; read through their models, no foreign keys.
    from switchboard.groups.models import RoomMember
    from switchboard.metering.models import ParticipantRow

    mine = select(RoomMember.room_id).where(RoomMember.user_id == principal.user_id)
    in_my_rooms = select(RoomMember.user_id).where(RoomMember.room_id.in_(mine), RoomMember.user_id.in_(ids))
    owned = select(ParticipantRow.economy_id).where(
        ParticipantRow.kind == "user",
        ParticipantRow.participant_id == principal.user_id,
        ParticipantRow.role == "owner",
    )
    in_my_economies = select(ParticipantRow.participant_id).where(
        and_(
            ParticipantRow.economy_id.in_(owned),
            ParticipantRow.kind == "user",
            ParticipantRow.participant_id.in_(ids),
        )
    )
    return set(await session.scalars(in_my_rooms)) | set(await session.scalars(in_my_economies))


async def emails(session: AsyncSession, principal: Principal, ids: Collection[uuid.UUID]) -> list[UserOut]:
    """The id and email of each of `ids` the caller may know by email, in the order asked."""
    wanted = list(dict.fromkeys(ids))
    if not 1 <= len(wanted) <= MAX_IDS:
        raise ValidationFailed(f"give between 1 and {MAX_IDS} user ids", param="id")
    allowed = set(wanted)
    if not principal.is_admin:
        others = allowed - {principal.user_id}
        allowed = (allowed & {principal.user_id}) | (
            await _colleagues(session, principal, others) if others else set()
        )
    if not allowed:
        return []
    found = dict(
        (await session.execute(select(User.id, User.email).where(User.id.in_(allowed)))).tuples().all()
    )
    # An SSO account whose identity provider sent no email has none to show: left out like the unknown.
    return [
        UserOut(id=user_id, email=email) for user_id in wanted if (email := found.get(user_id)) is not None
    ]
