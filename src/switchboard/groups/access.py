"""Who may see and change a room: the caller's room role, capped by a delegation token's scope."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden, NotFound
from switchboard.groups.models import RoomMember

# What the caller may do in a room, from least to most.
NONE, MANAGE, OWN = 0, 1, 2


def room_not_found() -> NotFound:
    # Same answer for a room that does not exist and one the caller is not in (SPEC §2).
    return NotFound("working group not found", code="GROUP_NOT_FOUND")


@dataclass(frozen=True)
class RoomAccess:
    room_id: uuid.UUID
    role: str
    power: int
    delegated: bool = False

    def require(self, needed: int, what: str) -> None:
        if self.power >= needed:
            return
        if self.delegated and self.power == NONE and self.role in ("owner", "manager"):
            raise Forbidden(f"a delegation token needs scope 'manage' to {what}")
        who = "owners" if needed >= OWN else "owners and managers"
        raise Forbidden(f"only the room's {who} may {what}")


def power_of(principal: Principal, role: str) -> int:
    """Owners own, managers manage; a delegation token needs `manage` on top, never adds to the role."""
    if principal.is_viewer:
        return NONE
    if principal.is_delegated and not principal.delegation_allows("manage"):
        return NONE
    return {"owner": OWN, "manager": MANAGE}.get(role, NONE)


def sees_room(principal: Principal, room_id: uuid.UUID) -> bool:
    """A delegation token acts for its `acting_as` room and no other."""
    return not principal.is_delegated or principal.acting_as == room_id


async def room_access(session: AsyncSession, principal: Principal, room_id: uuid.UUID) -> RoomAccess:
    """The caller's standing in a room; 404 when they are not a member (or act for another room)."""
    if not sees_room(principal, room_id):
        raise room_not_found()
    role = await session.scalar(
        select(RoomMember.role).where(RoomMember.room_id == room_id, RoomMember.user_id == principal.user_id)
    )
    if role is None:
        raise room_not_found()
    return RoomAccess(
        room_id=room_id, role=role, power=power_of(principal, role), delegated=principal.is_delegated
    )
