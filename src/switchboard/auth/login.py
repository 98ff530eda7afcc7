"""Sign-in with email and password, slowed down for guessers."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.audit import sign_ins
from switchboard.auth.context import AuthContext
from switchboard.auth.models import User
from switchboard.auth.refresh import open_family
from switchboard.auth.schemas import LoginResult
from switchboard.auth.sign_in import Identity
from switchboard.auth.users import normalise_email
from switchboard.errors import Unauthorized

# One answer for unknown email and wrong password, so that the reply does not confirm an account.
INVALID = "invalid email or password"


async def login(context: AuthContext, session: AsyncSession, email: str, password: str) -> LoginResult:
    address = normalise_email(email)
    async with context.throttle.attempt(address) as attempt:
        user = await session.scalar(select(User).where(User.email == address))
        # An unknown email still pays for one hash, so timing does not tell accounts apart.
        if not await context.passwords.verify(user.password_hash if user else None, password):
            await sign_ins.failed(session, context.sessionmaker, method="password", email=address)
            raise Unauthorized(INVALID)
        assert user is not None and user.password_hash is not None
        attempt.succeeded = True
    if context.passwords.needs_rehash(user.password_hash):
        user.password_hash = await context.passwords.hash(password)
    await sign_ins.succeeded(session, method="password", user_id=user.id, role=user.role, email=user.email)
    return await open_family(context, session, Identity.of_user(user.id, user.email, user.role))
