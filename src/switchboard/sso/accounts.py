"""SSO people as users: created at their first sign-in, known by (issuer, `sub`), never by email."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.auth.models import User
from switchboard.auth.users import normalise_email
from switchboard.errors import Forbidden
from switchboard.kit.clock import utcnow

EMAIL_TAKEN = (
    "the email your identity provider gives belongs to another Switchboard account; an administrator "
    "must remove that account or change its email before you can sign in with SSO"
)


def email_of(claims: Mapping[str, object]) -> str | None:
    value = claims.get("email")
    if not isinstance(value, str):
        return None
    address = normalise_email(value)
    local, at, domain = address.partition("@")
    return address if local and at and domain and len(address) <= 320 else None


async def _find(session: AsyncSession, issuer: str, subject: str) -> User | None:
    query = select(User).where(User.oidc_issuer == issuer, User.oidc_subject == subject)
    user: User | None = await session.scalar(query)
    return user


async def _email_free(session: AsyncSession, email: str | None, owner: uuid.UUID | None = None) -> bool:
    if email is None:
        return True
    holder = await session.scalar(select(User.id).where(User.email == email))
    return holder is None or holder == owner


async def account(
    sessionmaker: async_sessionmaker[AsyncSession],
    issuer: str,
    claims: Mapping[str, object],
    role: str,
    *,
    refresh: bool,
) -> User:
    """The user of these verified claims, created if new. `refresh` (a console sign-in, whose ID token
    is the identity provider's word on who the person is now) also brings role and email up to date;
    a bearer token on /v1 may lack the role claim, so it never demotes anyone."""
    subject = str(claims["sub"])
    email = email_of(claims)
    try:
        async with sessionmaker() as session, session.begin():
            user = await _find(session, issuer, subject)
            if user is not None:
                if refresh:
                    user.role = role
                    if email != user.email and await _email_free(session, email, user.id):
                        user.email = email
                return user
            # Never linked to a password account by email: an identity provider's email is not proof
            # of owning the account that has it, and linking would hand that account over.
            if not await _email_free(session, email):
                raise Forbidden(EMAIL_TAKEN)
            user = User(
                id=uuid.uuid4(),
                email=email,
                role=role,
                password_hash=None,
                created_at=utcnow(),
                oidc_issuer=issuer,
                oidc_subject=subject,
            )
            session.add(user)
            await session.flush()
            return user
    except IntegrityError:
        pass  # another call (or replica) created this person at the same moment, or took the email
    async with sessionmaker() as session:
        found = await _find(session, issuer, subject)
    if found is None:
        raise Forbidden(EMAIL_TAKEN)
    return found
