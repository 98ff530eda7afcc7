"""Delegation tokens: let an agent act for a room, no further than the minting member may."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.context import AuthContext
from switchboard.auth.models import DelegationToken
from switchboard.auth.paging import newest_first
from switchboard.auth.principal import SCOPE_ORDER, Principal
from switchboard.auth.schemas import DelegationRequest, DelegationResult, DelegationTokenInfo
from switchboard.errors import Forbidden, NotFound
from switchboard.kit.clock import utcnow

# The widest scope each room role may hand on (SPEC §2 and §7): viewers read, members also call
# models, owners and managers also change the room's credentials and members.
ROOM_ROLE_CEILING = {"viewer": "read", "member": "write", "manager": "manage", "owner": "manage"}


def _ceiling(principal: Principal, room_role: str) -> int:
    held = SCOPE_ORDER[ROOM_ROLE_CEILING.get(room_role, "read")]
    if principal.is_viewer:
        held = SCOPE_ORDER["read"]  # a read-only account stays read-only in every room
    return held


def _may_manage(principal: Principal) -> None:
    if principal.is_delegated:
        raise Forbidden("a delegation token cannot mint or manage delegation tokens")


async def mint(
    context: AuthContext,
    session: AsyncSession,
    principal: Principal,
    request: DelegationRequest,
    room_role: str | None,
) -> DelegationResult:
    """`room_role`: the minting user's role in `request.group_id` (None: not a member), which the
    rooms domain, above this one, reads (groups/auth_routes.py)."""
    _may_manage(principal)
    if room_role is None:
        # Not a member: the room may as well not exist (SPEC §2, 404 rather than 403).
        raise NotFound("working group not found")
    scopes = sorted(set(request.delegation_scope), key=SCOPE_ORDER.__getitem__)
    if SCOPE_ORDER[scopes[-1]] > _ceiling(principal, room_role):
        raise Forbidden("requested delegation scope exceeds what you hold in this working group")
    now = utcnow()
    row = DelegationToken(
        id=uuid.uuid4(),
        user_id=principal.user_id,
        room_id=request.group_id,
        scope=list(scopes),
        created_at=now,
        expires_at=now + timedelta(seconds=request.expiry_seconds),
    )
    session.add(row)
    await session.flush()
    token = context.codec.mint(
        sub=principal.user_id,
        role=principal.role,
        permissions=sorted(principal.permissions),
        email=principal.email,
        ttl_seconds=request.expiry_seconds,
        extra={
            "auth_method": "delegation",
            "acting_as": str(request.group_id),
            "group_account_address": None,
            "delegation_scope": list(scopes),
            "delegation_token_id": str(row.id),
        },
    )
    return DelegationResult(
        delegation_jwt=token,
        delegation_scope=list(scopes),
        expiry_seconds=request.expiry_seconds,
        group_id=request.group_id,
        delegation_token_id=row.id,
        expires_at=row.expires_at,
    )


async def list_active(
    session: AsyncSession, principal: Principal, cursor: str | None, limit: int
) -> tuple[list[DelegationTokenInfo], str | None]:
    _may_manage(principal)
    query = select(DelegationToken).where(
        DelegationToken.user_id == principal.user_id,
        DelegationToken.revoked_at.is_(None),
        DelegationToken.expires_at > utcnow(),
    )
    rows, next_cursor = await newest_first(
        session, query, DelegationToken.created_at, DelegationToken.id, cursor, limit
    )
    return [
        DelegationTokenInfo(
            id=row.id,
            group_id=row.room_id,
            delegation_scope=list(row.scope),
            created_at=row.created_at,
            expires_at=row.expires_at,
        )
        for row in rows
    ], next_cursor


async def revoke(session: AsyncSession, principal: Principal, token_id: str) -> None:
    """Revoke a token the caller minted (again is fine); anyone else's is not found."""
    _may_manage(principal)
    try:
        wanted = uuid.UUID(token_id)
    except ValueError:
        raise NotFound("delegation token not found") from None
    mine = DelegationToken.user_id == principal.user_id
    row = await session.scalar(select(DelegationToken).where(DelegationToken.id == wanted, mine))
    if row is None:
        raise NotFound("delegation token not found")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        await session.flush()


async def is_revoked(session: AsyncSession, token_id: str) -> bool:
    """Only tokens minted here are tracked; one from the auth service or `switchboard token` is not."""
    try:
        wanted = uuid.UUID(token_id)
    except ValueError:
        return False
    revoked_at = await session.scalar(select(DelegationToken.revoked_at).where(DelegationToken.id == wanted))
    return revoked_at is not None
