"""Whose email a caller may read (GET /users): the console names people by email, not by id.

An email is personal: a caller reads their own, an Admin reads anyone's, and others read the emails
of people they already work with by id: fellow members of one of their rooms (the member list shows
them anyway) and the user participants of an economy they own (whose usage they read per user).
Anyone else is left out of the answer, exactly as an unknown id is, so the answer never tells
whether an id belongs to someone.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.models import User
from switchboard.auth.principal import Principal
from switchboard.auth.schemas import UserOut
from switchboard.errors import ValidationFailed

MAX_IDS = 100


# Those of the ids who share a room with the caller or take part in an economy the caller owns: the
# rooms and economies domains, above this one, know (groups/auth_routes.py).
Colleagues = Callable[[AsyncSession, Principal, set[uuid.UUID]], Awaitable[set[uuid.UUID]]]


async def emails(
    session: AsyncSession, principal: Principal, ids: Collection[uuid.UUID], colleagues: Colleagues
) -> list[UserOut]:
    """The id and email of each of `ids` the caller may know by email, in the order asked."""
    wanted = list(dict.fromkeys(ids))
    if not 1 <= len(wanted) <= MAX_IDS:
        raise ValidationFailed(f"give between 1 and {MAX_IDS} user ids", param="id")
    allowed = set(wanted)
    if not principal.is_admin:
        others = allowed - {principal.user_id}
        allowed = (allowed & {principal.user_id}) | (
            await colleagues(session, principal, others) if others else set()
        )
    if not allowed:
        return []
    rows = await session.execute(select(User.id, User.email).where(User.id.in_(allowed)))
    found = {user_id: email for user_id, email in rows}
    # An SSO account whose identity provider sent no email has none to show: left out like the unknown.
    return [
        UserOut(id=user_id, email=email) for user_id in wanted if (email := found.get(user_id)) is not None
    ]
