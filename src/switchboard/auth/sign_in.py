"""Who a sign-in is for, and the 15-minute access token every sign-in path hands out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from switchboard.auth.principal import ROLE_DEFAULT_PERMISSIONS
from switchboard.auth.schemas import LoginResult, SignedInUser
from switchboard.auth.tokens import ACCESS, TokenCodec

ACCESS_TTL_SECONDS = 15 * 60


@dataclass(frozen=True)
class Identity:
    user_id: uuid.UUID
    email: str | None
    role: str
    permissions: tuple[str, ...]
    # Set for an API-key exchange: the access token then names the key, and dies with it.
    api_key_id: uuid.UUID | None = None

    @classmethod
    def of_user(cls, user_id: uuid.UUID, email: str | None, role: str) -> Identity:
        return cls(user_id, email, role, ROLE_DEFAULT_PERMISSIONS.get(role, ()))


def access_token(codec: TokenCodec, identity: Identity, session_id: uuid.UUID) -> str:
    # `jti` keeps two tokens of one session minted in the same second distinct.
    extra: dict[str, object] = {"session_id": str(session_id), "jti": uuid.uuid4().hex}
    if identity.api_key_id is not None:
        extra.update(auth_method="api_key", api_key_id=str(identity.api_key_id))
    return codec.mint(
        sub=identity.user_id,
        role=identity.role,
        permissions=identity.permissions,
        email=identity.email,
        ttl_seconds=ACCESS_TTL_SECONDS,
        extra=extra,
        typ=ACCESS,
    )


def login_result(codec: TokenCodec, identity: Identity, family_id: uuid.UUID, refresh: str) -> LoginResult:
    # The refresh family is the session: usage records group by it across refreshes.
    return LoginResult(
        token=access_token(codec, identity, family_id),
        refresh_token=refresh,
        expires_in=ACCESS_TTL_SECONDS,
        user=SignedInUser(id=identity.user_id, email=identity.email, role=identity.role),
    )
