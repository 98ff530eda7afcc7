"""Password accounts of the embedded auth: creating one (the CLI and tests do)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.hashing import Passwords
from switchboard.auth.models import User
from switchboard.auth.principal import ROLES
from switchboard.errors import Conflict, ValidationFailed
from switchboard.kit.clock import utcnow

MIN_PASSWORD_LENGTH = 8


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
        raise ValidationFailed(
            f"password must have at least {MIN_PASSWORD_LENGTH} characters", param="password"
        )
    if await session.scalar(select(User.id).where(User.email == address)) is not None:
        raise Conflict("a user with this email exists")
    user = User(
        id=uuid.uuid4(),
        email=address,
        role=role,
        password_hash=await passwords.hash(password),
        created_at=utcnow(),
    )
    session.add(user)
    try:
        await session.flush()
    except IntegrityError:
        raise Conflict("a user with this email exists") from None
    return user


async def user_id_by_email(session: AsyncSession, email: str) -> uuid.UUID | None:
    return await session.scalar(select(User.id).where(User.email == normalise_email(email)))
