"""HTTP routes of rooms and members (SPEC §7); each calls one service function."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status

from switchboard.auth.dependencies import CurrentPrincipal, WriterPrincipal
from switchboard.db.session import DbSession
from switchboard.groups import members, service
from switchboard.groups.schemas import MemberAdd, MemberOut, MemberUpdate, RoomCreate, RoomOut, RoomUpdate
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page

router = APIRouter(prefix="/working-groups", tags=["Working Groups"])


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="createWorkingGroup_WorkingGroups")
async def create_room(body: RoomCreate, principal: WriterPrincipal, session: DbSession) -> RoomOut:
    return await service.create_room(session, principal, body)


@router.get("", operation_id="listWorkingGroups_WorkingGroups")
async def list_rooms(
    principal: CurrentPrincipal, session: DbSession, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
) -> Page[RoomOut]:
    return await service.list_rooms(session, principal, cursor, limit)


@router.get("/{room_id}", operation_id="getWorkingGroup_WorkingGroups")
async def get_room(room_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession) -> RoomOut:
    return await service.get_room(session, principal, room_id)


@router.patch("/{room_id}", operation_id="updateWorkingGroup_WorkingGroups")
async def update_room(
    room_id: uuid.UUID, body: RoomUpdate, principal: WriterPrincipal, session: DbSession
) -> RoomOut:
    return await service.update_room(session, principal, room_id, body)


@router.delete(
    "/{room_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="deleteWorkingGroup_WorkingGroups"
)
async def delete_room(room_id: uuid.UUID, principal: WriterPrincipal, session: DbSession) -> Response:
    await service.delete_room(session, principal, room_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{room_id}/members", operation_id="listWorkingGroupMembers_WorkingGroups")
async def list_members(
    room_id: uuid.UUID,
    principal: CurrentPrincipal,
    session: DbSession,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[MemberOut]:
    return await members.list_members(session, principal, room_id, cursor, limit)


@router.post(
    "/{room_id}/members",
    status_code=status.HTTP_201_CREATED,
    operation_id="addWorkingGroupMember_WorkingGroups",
)
async def add_member(
    room_id: uuid.UUID, body: MemberAdd, principal: WriterPrincipal, session: DbSession
) -> MemberOut:
    return await members.add_member(session, principal, room_id, body)


@router.patch("/{room_id}/members/{user_id}", operation_id="updateWorkingGroupMember_WorkingGroups")
async def update_member(
    room_id: uuid.UUID, user_id: uuid.UUID, body: MemberUpdate, principal: WriterPrincipal, session: DbSession
) -> MemberOut:
    return await members.update_member(session, principal, room_id, user_id, body)


@router.delete(
    "/{room_id}/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="removeWorkingGroupMember_WorkingGroups",
)
async def remove_member(
    room_id: uuid.UUID, user_id: uuid.UUID, principal: WriterPrincipal, session: DbSession
) -> Response:
    await members.remove_member(session, principal, room_id, user_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
