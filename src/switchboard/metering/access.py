"""Who participates in, sees, reads the usage of and manages an economy (SPEC §2, §8)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden, NotFound
from switchboard.metering.economies import Economy, economy_id_for, get_economy
from switchboard.metering.models import ParticipantRow

OWNER = "owner"
MEMBER = "member"
READ_USAGE = "ReadUsage"


async def rooms_of(session: AsyncSession, user_id: uuid.UUID) -> list[uuid.UUID]:
    """The caller's rooms, through the groups domain's contract."""
    from switchboard.groups.service import room_ids_of

    return list(await room_ids_of(session, user_id))


async def role_in(session: AsyncSession, economy_id: uuid.UUID, user_id: uuid.UUID) -> str | None:
    """ "owner", "member" or None. Users are named directly or through a room they belong to;
    rooms confer membership only. Everyone is at least a member of `default`.
    """
    direct = await session.scalar(
        select(ParticipantRow.role).where(
            ParticipantRow.economy_id == economy_id,
            ParticipantRow.kind == "user",
            ParticipantRow.participant_id == user_id,
        )
    )
    if direct is not None:
        return direct
    if economy_id == economy_id_for("default"):
        return MEMBER
    rooms = await rooms_of(session, user_id)
    if rooms:
        via_room = await session.scalar(
            select(ParticipantRow.economy_id)
            .where(
                ParticipantRow.economy_id == economy_id,
                ParticipantRow.kind == "room",
                ParticipantRow.participant_id.in_(rooms),
            )
            .limit(1)
        )
        if via_room is not None:
            return MEMBER
    return None


async def participating_economy_ids(
    session: AsyncSession, user_id: uuid.UUID, rooms: Collection[uuid.UUID]
) -> set[uuid.UUID]:
    """Every economy the user participates in, directly or through one of `rooms`, and `default`."""
    mine = or_(
        and_(ParticipantRow.kind == "user", ParticipantRow.participant_id == user_id),
        and_(ParticipantRow.kind == "room", ParticipantRow.participant_id.in_(list(rooms))),
    )
    found = set(await session.scalars(select(ParticipantRow.economy_id).where(mine)))
    found.add(economy_id_for("default"))
    return found


def sees_everything(principal: Principal) -> bool:
    return principal.is_admin or principal.has_permission(READ_USAGE)


async def visible_economy_ids(session: AsyncSession, principal: Principal) -> set[uuid.UUID] | None:
    """Ids of the economies the caller may see; None means all of them."""
    if sees_everything(principal):
        return None
    rooms = await rooms_of(session, principal.user_id)
    return await participating_economy_ids(session, principal.user_id, rooms)


async def usage_readable_ids(session: AsyncSession, principal: Principal) -> set[uuid.UUID] | None:
    """Ids of the economies whose usage the caller may read; None means all of them.
    Owners are users named directly (a room confers membership only), as in `role_in`."""
    if sees_everything(principal):
        return None
    owned = select(ParticipantRow.economy_id).where(
        ParticipantRow.kind == "user",
        ParticipantRow.participant_id == principal.user_id,
        ParticipantRow.role == OWNER,
    )
    return set(await session.scalars(owned))


@dataclass(frozen=True)
class Access:
    economy: Economy
    role: str | None  # the caller's participant role, if any
    admin: bool

    @property
    def reads_usage(self) -> bool:
        return self.admin or self.role == OWNER


async def access_to(session: AsyncSession, principal: Principal, ref: str) -> Access:
    """The economy named by id or slug, as this caller may see it; 404 when unknown or invisible."""
    economy = await get_economy(session, ref)
    role = await role_in(session, economy.id, principal.user_id)
    if role is None and not sees_everything(principal):
        raise NotFound("economy not found")
    return Access(economy, role, sees_everything(principal))


async def usage_reader(session: AsyncSession, principal: Principal, ref: str) -> Economy:
    access = await access_to(session, principal, ref)
    if not access.reads_usage:
        raise Forbidden("reading usage needs Admin, the economy's owner role or permission ReadUsage")
    return access.economy


async def participant_manager(
    session: AsyncSession, principal: Principal, ref: str, *, reading: bool = False
) -> Economy:
    """Owners and Admins manage participants; listing them is also open to `ReadUsage`."""
    if not reading:
        if principal.is_viewer:
            raise Forbidden("Viewer role is read-only")
        if not principal.delegation_allows("manage"):
            raise Forbidden("delegation scope 'manage' required")
    access = await access_to(session, principal, ref)
    allowed = access.role == OWNER or principal.is_admin or (reading and access.admin)
    if not allowed:
        raise Forbidden("managing participants needs Admin or the economy's owner role")
    return access.economy


def require_economy_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise Forbidden("creating and changing economies needs role Admin or SuperAdmin")
    if not principal.delegation_allows("manage"):
        raise Forbidden("delegation scope 'manage' required")
