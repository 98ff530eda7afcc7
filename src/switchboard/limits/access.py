"""Who may manage which limit (SPEC §13): Admins any; economy owners inside their economy; room
owners and managers their room. A limit the caller may not manage is answered 404."""

from __future__ import annotations

import uuid

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden, NotFound
from switchboard.groups.access import MANAGE, room_access, sees_room
from switchboard.groups.service import managed_room_ids, member_role
from switchboard.limits import store
from switchboard.limits.models import LimitRow
from switchboard.limits.store import LimitKey
from switchboard.metering.service import owned_economy_ids, role_in

OWNER = "owner"


def require_writer(principal: Principal) -> None:
    """Changing limits is management: never a Viewer, and a delegation token needs scope `manage`."""
    if principal.is_viewer:
        raise Forbidden("Viewer role is read-only")
    if not principal.delegation_allows("manage"):
        raise Forbidden("delegation scope 'manage' required")


async def _owns(session: AsyncSession, principal: Principal, economy_id: uuid.UUID) -> bool:
    return await role_in(session, economy_id, principal.user_id) == OWNER


async def check_create(session: AsyncSession, principal: Principal, key: LimitKey) -> None:
    """403 or 404 unless the caller may put this limit in place (its subject already in stored form)."""
    if principal.is_admin:
        return
    if key.economy_id is not None:
        role = await role_in(session, key.economy_id, principal.user_id)
        if role == OWNER:
            return
        # A room's managers may narrow their room's limit to any economy; anyone else must see it.
        if role is None and key.subject_type != "room":
            raise NotFound("economy not found")
    if key.subject_type == "economy":
        role = await role_in(session, uuid.UUID(key.subject_id), principal.user_id)
        if role == OWNER:
            return
        if role is None:
            raise NotFound("economy not found")
        raise Forbidden("only the economy's owners (or an Admin) may limit it")
    if key.subject_type == "room":
        access = await room_access(session, principal, uuid.UUID(key.subject_id))
        access.require(MANAGE, "limit the room")
        return
    if key.subject_type == "user" and key.subject_id == str(principal.user_id):
        raise Forbidden("you may not limit yourself; ask an Admin or an owner of the economy")
    raise Forbidden(
        f"a limit on a {key.subject_type} needs an Admin, or an owner of the economy it is narrowed to"
        " (economy_id)"
    )


async def may_manage(session: AsyncSession, principal: Principal, key: LimitKey) -> bool:
    if principal.is_admin:
        return True
    if key.economy_id is not None and await _owns(session, principal, key.economy_id):
        return True
    if key.subject_type == "economy":
        return await _owns(session, principal, uuid.UUID(key.subject_id))
    if key.subject_type == "room":
        room_id = uuid.UUID(key.subject_id)
        if not sees_room(principal, room_id):
            return False
        return await member_role(session, room_id, principal.user_id) in ("owner", "manager")
    return False


async def managed(session: AsyncSession, principal: Principal, limit_id: uuid.UUID) -> LimitRow:
    """The limit, if the caller may manage it; else the same 404 as for a limit that does not exist."""
    row = await store.get(session, limit_id)
    if row is None or not await may_manage(session, principal, store.key_of(row)):
        raise NotFound("limit not found")
    return row


async def reach_of(session: AsyncSession, principal: Principal) -> ColumnElement[bool] | None:
    """The limits the caller may manage, as a filter; None for all of them."""
    if principal.is_admin:
        return None
    economies = await owned_economy_ids(session, principal.user_id)
    rooms = await managed_room_ids(session, principal.user_id)
    if principal.is_delegated:
        rooms = [room for room in rooms if sees_room(principal, room)]
    return store.reach(economies, rooms)
