"""API keys: issue once, list, revoke, and turn a presented key into a Principal or a sign-in."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.audit import sign_ins
from switchboard.auth import token_format
from switchboard.auth.context import AuthContext
from switchboard.auth.models import ApiKey
from switchboard.auth.paging import newest_first
from switchboard.auth.principal import ROLES, Principal
from switchboard.auth.refresh import open_family
from switchboard.auth.schemas import ApiKeyInfo, ApiKeyIssued, ApiKeyIssueRequest, LoginResult
from switchboard.auth.sign_in import Identity
from switchboard.errors import Forbidden, NotFound, Unauthorized
from switchboard.kit.clock import utcnow

INVALID = "invalid API key"


def _info(key: ApiKey) -> ApiKeyInfo:
    return ApiKeyInfo(
        id=key.id,
        service_name=key.service_name,
        description=key.description,
        key_prefix=key.key_prefix,
        created_at=key.created_at,
        revoked_at=key.revoked_at,
    )


def _may_manage(principal: Principal) -> None:
    if principal.is_delegated:
        raise Forbidden("a delegation token cannot manage API keys")


async def issue(
    context: AuthContext, session: AsyncSession, principal: Principal, request: ApiKeyIssueRequest
) -> ApiKeyIssued:
    """A new key carrying the caller's role and permissions as they are now."""
    _may_manage(principal)
    if principal.auth_method == "api_key":
        # A leaked key must not be able to outlive its revocation by minting successors.
        raise Forbidden("an API key cannot issue API keys; sign in as the owner")
    if principal.role not in ROLES:
        # The key stores the role it acts with; one we do not know could mean anything later.
        raise Forbidden("API keys are issued to the known roles only")
    plain = token_format.issue(token_format.API_KEY_PREFIX)
    key = ApiKey(
        id=uuid.uuid4(),
        user_id=principal.user_id,
        email=principal.email if principal.email and len(principal.email) <= 320 else None,
        role=principal.role,
        permissions=sorted(principal.permissions),
        service_name=request.service_name,
        description=request.description,
        key_prefix=token_format.display_prefix(plain, token_format.API_KEY_PREFIX),
        key_hash=context.api_key_hash(plain),
        created_at=utcnow(),
    )
    session.add(key)
    await session.flush()
    return ApiKeyIssued(api_key=plain, **_info(key).model_dump())


async def list_active(
    session: AsyncSession, principal: Principal, cursor: str | None, limit: int
) -> tuple[list[ApiKeyInfo], str | None]:
    _may_manage(principal)
    query = select(ApiKey).where(ApiKey.user_id == principal.user_id, ApiKey.revoked_at.is_(None))
    rows, next_cursor = await newest_first(session, query, ApiKey.created_at, ApiKey.id, cursor, limit)
    return [_info(row) for row in rows], next_cursor


async def revoke(session: AsyncSession, principal: Principal, key_id: str) -> ApiKeyInfo:
    """Revoke one of the caller's keys (again is fine); someone else's key is not found."""
    _may_manage(principal)
    try:
        wanted = uuid.UUID(key_id)
    except ValueError:
        raise NotFound("API key not found") from None
    key = await session.scalar(
        select(ApiKey).where(ApiKey.id == wanted, ApiKey.user_id == principal.user_id).with_for_update()
    )
    if key is None:
        raise NotFound("API key not found")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        await session.flush()
    return _info(key)


async def _active(context: AuthContext, session: AsyncSession, presented: str) -> ApiKey:
    # The checksum turns away typos and inventions before any database work.
    if not token_format.well_formed(presented, token_format.API_KEY_PREFIX):
        raise Unauthorized(INVALID)
    key = await session.scalar(select(ApiKey).where(ApiKey.key_hash == context.api_key_hash(presented)))
    if key is None or key.revoked_at is not None:
        raise Unauthorized(INVALID)
    return key


async def principal_for(context: AuthContext, presented: str) -> Principal:
    """The bearer-key path: one indexed read per request, so a revocation holds on every replica."""
    async with context.reader() as session:
        key = await _active(context, session, presented)
    return Principal(
        user_id=key.user_id,
        role=key.role,
        permissions=frozenset(key.permissions),
        email=key.email,
        auth_method="api_key",
        api_key_id=key.id,
    )


async def exchange(context: AuthContext, session: AsyncSession, presented: str) -> LoginResult:
    """`POST /auth/api-key`: a JWT sign-in whose tokens stop when the key is revoked."""
    try:
        key = await _active(context, session, presented)
    except Unauthorized:
        await sign_ins.failed(session, context.sessionmaker, method="api_key")
        raise
    identity = Identity(key.user_id, key.email, key.role, tuple(key.permissions), key.id)
    await sign_ins.succeeded(
        session, method="api_key", user_id=key.user_id, role=key.role, email=key.email, api_key_id=key.id
    )
    return await open_family(context, session, identity)


async def is_revoked(session: AsyncSession, key_id: uuid.UUID) -> bool:
    """Whether a token exchanged for this key must stop (an id we never issued is not ours to judge)."""
    revoked_at = await session.scalar(select(ApiKey.revoked_at).where(ApiKey.id == key_id))
    return revoked_at is not None


async def api_key_exists(session: AsyncSession, key_id: uuid.UUID) -> bool:
    """Issued here, revoked or not (a limit on a revoked key is harmless and may predate the revocation)."""
    return await session.scalar(select(ApiKey.id).where(ApiKey.id == key_id)) is not None
