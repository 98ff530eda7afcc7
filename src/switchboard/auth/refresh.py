"""Single-use refresh tokens in families: open one at sign-in, rotate it, revoke it on reuse."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, cast

from sqlalchemy import select, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.audit import sign_ins
from switchboard.auth import token_format
from switchboard.auth.context import AuthContext
from switchboard.auth.models import ApiKey, RefreshFamily, RefreshToken, User
from switchboard.auth.schemas import LoginResult
from switchboard.auth.sign_in import Identity, login_result
from switchboard.errors import Unauthorized
from switchboard.kit.clock import utcnow

REFRESH_TTL = timedelta(days=30)
INVALID = "invalid refresh token"


async def open_family(context: AuthContext, session: AsyncSession, identity: Identity) -> LoginResult:
    """A fresh sign-in: a new family with its first refresh token, and an access token."""
    family = RefreshFamily(
        id=uuid.uuid4(), user_id=identity.user_id, api_key_id=identity.api_key_id, created_at=utcnow()
    )
    session.add(family)
    await session.flush()
    refresh = await _issue(context, session, family.id)
    return login_result(context.codec, identity, family.id, refresh)


async def _issue(context: AuthContext, session: AsyncSession, family_id: uuid.UUID) -> str:
    token = token_format.issue(token_format.REFRESH_PREFIX)
    now = utcnow()
    session.add(
        RefreshToken(
            id=uuid.uuid4(),
            family_id=family_id,
            token_hash=context.refresh_hash(token),
            created_at=now,
            expires_at=now + REFRESH_TTL,
        )
    )
    await session.flush()
    return token


async def rotate(context: AuthContext, presented: str, scope: Mapping[str, Any] | None = None) -> LoginResult:
    """Trade a refresh token for a new pair; any second use of a token revokes its whole family.

    Runs in its own transaction so that a revocation is committed although the answer is a 401.
    """
    async with context.sessionmaker() as session, session.begin():
        # Who asked, for the audit trail (audit/origin.py), as a request's own session carries it.
        session.info["request_scope"] = scope or {}
        if not token_format.well_formed(presented, token_format.REFRESH_PREFIX):
            result = None
        else:
            result = await _rotate(context, session, context.refresh_hash(presented))
        if result is None:
            await sign_ins.failed(session, None, method="refresh")  # commits with a family's revocation
    if result is None:
        raise Unauthorized(INVALID)
    return result


async def _rotate(context: AuthContext, session: AsyncSession, digest: str) -> LoginResult | None:
    now = utcnow()
    # The claim comes first and is conditional: of two concurrent uses (on any replica) exactly one
    # sees rowcount 1. Writing before reading also lets SQLite wait for its lock instead of failing.
    claim = cast(
        CursorResult[Any],
        await session.execute(
            update(RefreshToken)
            .where(
                RefreshToken.token_hash == digest,
                RefreshToken.used_at.is_(None),
                RefreshToken.expires_at > now,
            )
            .values(used_at=now)
            .execution_options(synchronize_session=False)
        ),
    )
    row = (
        await session.execute(
            select(RefreshToken.used_at, RefreshFamily)
            .join(RefreshFamily, RefreshFamily.id == RefreshToken.family_id)
            .where(RefreshToken.token_hash == digest)
        )
    ).one_or_none()
    if row is None:
        return None
    used_at, family = row
    if claim.rowcount != 1:
        if used_at is not None:
            # Reuse: someone holds a copy of a spent token. End every token of the sign-in.
            await session.execute(
                update(RefreshFamily)
                .where(RefreshFamily.id == family.id, RefreshFamily.revoked_at.is_(None))
                .values(revoked_at=now)
                .execution_options(synchronize_session=False)
            )
        return None  # reused, or expired
    if family.revoked_at is not None:
        return None
    identity = await _identity(session, family)
    if identity is None:
        return None
    await sign_ins.succeeded(
        session,
        method="refresh",
        user_id=identity.user_id,
        role=identity.role,
        email=identity.email,
        api_key_id=identity.api_key_id,
    )
    return login_result(context.codec, identity, family.id, await _issue(context, session, family.id))


async def _identity(session: AsyncSession, family: RefreshFamily) -> Identity | None:
    """The family's owner as they are now: a revoked key or a deleted user ends the family."""
    if family.api_key_id is not None:
        key = await session.get(ApiKey, family.api_key_id)
        if key is None or key.revoked_at is not None:
            return None
        return Identity(key.user_id, key.email, key.role, tuple(key.permissions), key.id)
    user = await session.get(User, family.user_id)
    if user is None:
        return None
    return Identity.of_user(user.id, user.email, user.role)


async def end(context: AuthContext, presented: str) -> None:
    """Sign-out: the refresh token's whole family is revoked, so the session cannot be renewed on any
    replica. Quiet about unknown tokens: signing out twice, or with a spent token, is not an error."""
    if not token_format.well_formed(presented, token_format.REFRESH_PREFIX):
        return
    family = select(RefreshToken.family_id).where(RefreshToken.token_hash == context.refresh_hash(presented))
    async with context.sessionmaker() as session, session.begin():
        await session.execute(
            update(RefreshFamily)
            .where(RefreshFamily.id.in_(family.scalar_subquery()), RefreshFamily.revoked_at.is_(None))
            .values(revoked_at=utcnow())
            .execution_options(synchronize_session=False)
        )
