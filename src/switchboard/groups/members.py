"""Room members: who may add, re-role and remove whom, and the last owner who cannot leave."""

from __future__ import annotations

import uuid

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.errors import Conflict, Forbidden, NotFound
from switchboard.groups.access import MANAGE, OWN, RoomAccess, room_access
from switchboard.groups.models import RoomMember
from switchboard.groups.schemas import MemberAdd, MemberOut, MemberUpdate
from switchboard.groups.service import lock_room
from switchboard.kit.clock import utcnow
from switchboard.kit.pagination import Page, check_limit, encode_cursor, time_id_cursor


def _member_not_found() -> NotFound:
    return NotFound("member not found", code="MEMBER_NOT_FOUND")


def _require_for_roles(access: RoomAccess, *roles: str) -> None:
    """Managers handle managers, members and viewers; only owners make or unmake owners."""
    if "owner" in roles:
        access.require(OWN, "change who is an owner")
    else:
        access.require(MANAGE, "change members")


async def _target(session: AsyncSession, room_id: uuid.UUID, user_id: uuid.UUID) -> RoomMember:
    member = await session.get(RoomMember, (room_id, user_id))
    if member is None:
        raise _member_not_found()
    return member


async def _refuse_last_owner(session: AsyncSession, room_id: uuid.UUID) -> None:
    owners = await session.scalar(
        select(func.count())
        .select_from(RoomMember)
        .where(RoomMember.room_id == room_id, RoomMember.role == "owner")
    )
    if (owners or 0) <= 1:
        raise Conflict("the last owner cannot leave or step down; make another member owner first")


async def list_members(
    session: AsyncSession, principal: Principal, room_id: uuid.UUID, cursor: str | None, limit: int
) -> Page[MemberOut]:
    check_limit(limit)
    await room_access(session, principal, room_id)
    query = (
        select(RoomMember)
        .where(RoomMember.room_id == room_id)
        .order_by(RoomMember.created_at, RoomMember.user_id)
        .limit(limit + 1)
    )
    after = time_id_cursor(cursor)
    if after is not None:
        created_at, user_id = after
        query = query.where(
            or_(
                RoomMember.created_at > created_at,
                and_(RoomMember.created_at == created_at, RoomMember.user_id > user_id),
            )
        )
    rows = list(await session.scalars(query))
    items = [MemberOut.model_validate(row) for row in rows[:limit]]
    more = len(rows) > limit
    next_cursor = encode_cursor([items[-1].created_at.isoformat(), str(items[-1].user_id)]) if more else None
    return Page[MemberOut](data=items, next_cursor=next_cursor)


async def add_member(
    session: AsyncSession, principal: Principal, room_id: uuid.UUID, body: MemberAdd
) -> MemberOut:
    await lock_room(session, room_id)
    access = await room_access(session, principal, room_id)
    _require_for_roles(access, body.role)
    if await session.get(RoomMember, (room_id, body.user_id)) is not None:
        raise Conflict("this user is already a member; change their role instead")
    now = utcnow()
    member = RoomMember(
        room_id=room_id,
        user_id=body.user_id,
        role=body.role,
        added_by=principal.user_id,
        created_at=now,
        updated_at=now,
    )
    session.add(member)
    await session.flush()
    return MemberOut.model_validate(member)


async def update_member(
    session: AsyncSession, principal: Principal, room_id: uuid.UUID, user_id: uuid.UUID, body: MemberUpdate
) -> MemberOut:
    await lock_room(session, room_id)
    access = await room_access(session, principal, room_id)
    member = await _target(session, room_id, user_id)
    _require_for_roles(access, member.role, body.role)
    if member.role == "owner" and body.role != "owner":
        await _refuse_last_owner(session, room_id)
    if member.role != body.role:
        member.role = body.role
        member.updated_at = utcnow()
        await session.flush()
    return MemberOut.model_validate(member)


async def remove_member(
    session: AsyncSession, principal: Principal, room_id: uuid.UUID, user_id: uuid.UUID
) -> None:
    """Owners and managers remove others; any member may leave, except the last owner (409)."""
    await lock_room(session, room_id)
    access = await room_access(session, principal, room_id)
    member = await _target(session, room_id, user_id)
    leaving = user_id == principal.user_id
    if leaving:
        if principal.is_viewer or (principal.is_delegated and not principal.delegation_allows("manage")):
            raise Forbidden("this token may not change the room's members")
    else:
        _require_for_roles(access, member.role)
    if member.role == "owner":
        await _refuse_last_owner(session, room_id)
    await session.delete(member)  # through the ORM, so the audit trail records it
    await session.flush()
