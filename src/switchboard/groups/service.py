"""Rooms: the functions other domains call, and the rules for creating, reading and changing rooms."""

from __future__ import annotations

import uuid

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden, ValidationFailed
from switchboard.groups.access import MANAGE, OWN, RoomAccess, room_access, room_not_found, sees_room
from switchboard.groups.models import Room, RoomMember
from switchboard.groups.schemas import RoomCreate, RoomOut, RoomUpdate
from switchboard.kit.clock import utcnow
from switchboard.kit.pagination import Page, check_limit, encode_cursor, time_id_cursor

# --- The contract other domains build on (docs/ARCHITECTURE.md, "groups") ---


async def member_role(session: AsyncSession, room_id: uuid.UUID, user_id: uuid.UUID) -> str | None:
    """ "owner" | "manager" | "member" | "viewer", or None when the user is not in the room."""
    return await session.scalar(
        select(RoomMember.role).where(RoomMember.room_id == room_id, RoomMember.user_id == user_id)
    )


async def room_ids_of(session: AsyncSession, user_id: uuid.UUID) -> list[uuid.UUID]:
    rows = await session.scalars(
        select(RoomMember.room_id).where(RoomMember.user_id == user_id).order_by(RoomMember.room_id)
    )
    return list(rows)


async def room_default_economy(session: AsyncSession, room_id: uuid.UUID) -> uuid.UUID | None:
    return await session.scalar(select(Room.default_economy_id).where(Room.id == room_id))


async def room_exists(session: AsyncSession, room_id: uuid.UUID) -> bool:
    return await session.scalar(select(Room.id).where(Room.id == room_id)) is not None


async def managed_room_ids(session: AsyncSession, user_id: uuid.UUID) -> list[uuid.UUID]:
    """The rooms the user owns or manages (whose limits they may manage, SPEC §13)."""
    rows = await session.scalars(
        select(RoomMember.room_id)
        .where(RoomMember.user_id == user_id, RoomMember.role.in_(("owner", "manager")))
        .order_by(RoomMember.room_id)
    )
    return list(rows)


# --- Rooms ---


async def lock_room(session: AsyncSession, room_id: uuid.UUID) -> None:
    """Take the room's write lock before reading what a change depends on (e.g. the owner count).

    A no-op UPDATE locks the row on PostgreSQL and takes SQLite's write lock up front, so two
    concurrent changes run one after the other instead of both passing the same check.
    """
    result = await session.execute(update(Room).where(Room.id == room_id).values(updated_at=Room.updated_at))
    if result.rowcount == 0:  # type: ignore[attr-defined]
        raise room_not_found()


def _out(room: Room, role: str) -> RoomOut:
    return RoomOut(
        id=room.id,
        name=room.name,
        description=room.description,
        default_economy_id=room.default_economy_id,
        created_by=room.created_by,
        created_at=room.created_at,
        updated_at=room.updated_at,
        role=role,  # type: ignore[arg-type]
    )


async def create_room(session: AsyncSession, principal: Principal, body: RoomCreate) -> RoomOut:
    if principal.is_delegated:
        raise Forbidden("a delegation token acts for its room and cannot create rooms")
    if not (principal.has_permission("CreateGroup") or principal.is_admin):
        raise Forbidden("Insufficient permissions: CreateGroup")
    now = utcnow()
    room = Room(
        id=uuid.uuid4(),
        name=body.name,
        description=body.description,
        default_economy_id=body.default_economy_id,
        created_by=principal.user_id,
        created_at=now,
        updated_at=now,
    )
    session.add(room)
    await session.flush()
    session.add(
        RoomMember(
            room_id=room.id,
            user_id=principal.user_id,
            role="owner",
            added_by=principal.user_id,
            created_at=now,
            updated_at=now,
        )
    )
    await session.flush()
    return _out(room, "owner")


async def get_room(session: AsyncSession, principal: Principal, room_id: uuid.UUID) -> RoomOut:
    access = await room_access(session, principal, room_id)
    room = await session.get(Room, room_id)
    if room is None:
        raise room_not_found()
    return _out(room, access.role)


async def list_rooms(
    session: AsyncSession, principal: Principal, cursor: str | None, limit: int
) -> Page[RoomOut]:
    """The caller's rooms, oldest first (a delegation token sees only the room it acts for)."""
    check_limit(limit)
    query = (
        select(Room, RoomMember.role)
        .join(RoomMember, RoomMember.room_id == Room.id)
        .where(RoomMember.user_id == principal.user_id)
        .order_by(Room.created_at, Room.id)
        .limit(limit + 1)
    )
    if principal.is_delegated:
        query = query.where(Room.id == principal.acting_as)
    after = time_id_cursor(cursor)
    if after is not None:
        created_at, room_id = after
        query = query.where(
            or_(Room.created_at > created_at, and_(Room.created_at == created_at, Room.id > room_id))
        )
    rows = (await session.execute(query)).all()
    items = [_out(room, role) for room, role in rows[:limit]]
    more = len(rows) > limit
    next_cursor = encode_cursor([items[-1].created_at.isoformat(), str(items[-1].id)]) if more else None
    return Page[RoomOut](data=items, next_cursor=next_cursor)


async def update_room(
    session: AsyncSession, principal: Principal, room_id: uuid.UUID, body: RoomUpdate
) -> RoomOut:
    await lock_room(session, room_id)
    access = await room_access(session, principal, room_id)
    access.require(MANAGE, "change it")
    room = await session.get(Room, room_id)
    if room is None:
        raise room_not_found()
    given = body.model_fields_set
    if "name" in given:
        if body.name is None:
            raise ValidationFailed("name: a room's name cannot be removed", param="name")
        room.name = body.name
    if "description" in given:
        room.description = body.description
    if "default_economy_id" in given:
        room.default_economy_id = body.default_economy_id
    if given:
        room.updated_at = utcnow()
    await session.flush()
    return _out(room, access.role)


async def delete_room(session: AsyncSession, principal: Principal, room_id: uuid.UUID) -> None:
    """Deletes the room; its members and room credentials go with it (ON DELETE CASCADE)."""
    await lock_room(session, room_id)
    access = await room_access(session, principal, room_id)
    access.require(OWN, "delete it")
    await session.execute(delete(RoomMember).where(RoomMember.room_id == room_id))
    room = await session.get(Room, room_id)
    if room is not None:
        await session.delete(room)  # through the ORM, so the audit trail records the room going
        await session.flush()


__all__ = [
    "MANAGE",
    "OWN",
    "RoomAccess",
    "create_room",
    "delete_room",
    "get_room",
    "list_rooms",
    "lock_room",
    "member_role",
    "room_access",
    "room_default_economy",
    "room_ids_of",
    "room_not_found",
    "sees_room",
    "update_room",
]
