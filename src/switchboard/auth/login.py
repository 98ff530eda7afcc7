"""Password accounts: create one (CLI), and sign in with email and password."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.context import AuthContext
from switchboard.auth.hashing import Passwords
from switchboard.auth.models import User
from switchboard.auth.principal import ROLES
from switchboard.auth.refresh import open_family
from switchboard.auth.schemas import LoginResult
from switchboard.auth.sign_in import Identity
from switchboard.errors import Conflict, Unauthorized, ValidationFailed
from switchboard.kit.clock import utcnow

MIN_PASSWORD_LENGTH = 8
# One answer for unknown email and wrong password, so that the reply does not confirm an account.
INVALID = "invalid email or password"


def normalise_email(email: str) -> str:
    return email.strip().lower()


async def create_user(
    session: AsyncSession, passwords: Passwords, *, email: str, role: str, password: str
) -> User:
    address = normalise_email(email)
    local, at, domain = address.partition("@")
    if not (local and at and domain) or len(address) > 320 or any(c.isspace() for c in address):
        raise ValidationFailed("email is not a valid address", param="email")
    if role not in ROLES:
        raise ValidationFailed(f"role must be one of {', '.join(ROLES)}", param="role")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValidationFailed(f"password must have at least {MIN_PASSWORD_LENGTH} characters",
                               param="password")
    if await session.scalar(select(User.id).where(User.email == address)) is not None:
        raise Conflict("a user with this email exists")
    user = User(
        id=uuid.uuid4(), email=address, role=role, password_hash=await passwords.hash(password),
        created_at=utcnow(),
    )
    session.add(user)
    try:
        await session.flush()
    except IntegrityError:
        raise Conflict("a user with this email exists") from None
    return user


async def login(context: AuthContext, session: AsyncSession, email: str, password: str) -> LoginResult:
    address = normalise_email(email)
    async with context.throttle.attempt(address) as attempt:
        user = await session.scalar(select(User).where(User.email == address))
        # An unknown email still pays for one hash, so timing does not tell accounts apart.
        if not await context.passwords.verify(user.password_hash if user else None, password):
            raise Unauthorized(INVALID)
        assert user is not None
        attempt.succeeded = True
    if context.passwords.needs_rehash(user.password_hash):
        user.password_hash = await context.passwords.hash(password)
    return await open_family(context, session, Identity.of_user(user.id, user.email, user.role))
