"""The two Auth routes that need rooms: minting a delegation token for a room, and GET /users.

They are served under the Auth tag, but what they decide depends on the caller's rooms (and, for
/users, the economies they own): tables of domains above auth. Auth keeps the tokens and the emails;
this module reads the rooms and hands auth what it found.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, status
from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth import delegation, directory
from switchboard.auth.dependencies import Auth, CurrentPrincipal, require_permission
from switchboard.auth.principal import Principal
from switchboard.auth.schemas import DelegationRequest, DelegationResult, UserOut
from switchboard.db.session import DbSession
from switchboard.groups.models import RoomMember
from switchboard.groups.service import member_role
from switchboard.kit.pagination import Page

router = APIRouter(tags=["Auth"])
UserIds = Annotated[list[uuid.UUID], Query(alias="id", description="a user id; repeat, 1 to 100")]
Delegator = Annotated[Principal, Depends(require_permission("CreateDelegationToken"))]


async def colleagues(session: AsyncSession, principal: Principal, ids: set[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `ids` who share a room with the caller or take part in an economy the caller owns."""
    # The economies domain owns this table; read through its model, no foreign keys.
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


@router.get("/users", operation_id="listUsers_Auth")
async def list_users(
    principal: CurrentPrincipal,
    session: DbSession,
    user_ids: UserIds = [],  # noqa: B006 (FastAPI copies a default; the service refuses an empty list)
) -> Page[UserOut]:
    """The email of each given user the caller may know: themselves, fellow members of their rooms,
    participants of economies they own; Admins anyone. Others are left out, as unknown ids are."""
    return Page(data=await directory.emails(session, principal, user_ids, colleagues), next_cursor=None)


@router.post(
    "/auth/delegation/jwt", status_code=status.HTTP_201_CREATED, operation_id="createDelegation_Auth"
)
async def create_delegation(
    body: DelegationRequest, principal: Delegator, session: DbSession, auth: Auth
) -> DelegationResult:
    room_role = await member_role(session, body.group_id, principal.user_id)
    return await delegation.mint(auth, session, principal, body, room_role)
