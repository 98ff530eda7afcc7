"""HS256 JWT minting and hardened verification; the only module that imports pyjwt."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import jwt

from switchboard.auth.principal import ROLE_DEFAULT_PERMISSIONS, ROLES, Principal
from switchboard.errors import Unauthorized

ALGORITHM = "HS256"
MAX_LEEWAY_SECONDS = 120
# pyjwt accepts any integer `exp`; one far in the future (10**30) is a forged or broken token.
MAX_LIFETIME_SECONDS = 366 * 24 * 3600
# The token type (`typ` claim) that tells an access token from anything else we sign.
ACCESS = "access"


class TokenCodec:
    """Signs and verifies the gateway's tokens with one secret and audience."""

    def __init__(self, secret: str, audience: str, leeway_seconds: int = 30) -> None:
        self._secret = secret
        self.audience = audience
        self._leeway = max(0, min(leeway_seconds, MAX_LEEWAY_SECONDS))

    def mint(
        self,
        *,
        sub: uuid.UUID | str,
        role: str = "User",
        permissions: Iterable[str] | None = None,
        email: str | None = None,
        ttl_seconds: int = 900,
        audience: str | list[str] | None = None,
        extra: Mapping[str, Any] | None = None,
        typ: str = ACCESS,
    ) -> str:
        now = int(time.time())
        perms = list(permissions) if permissions is not None else list(ROLE_DEFAULT_PERMISSIONS.get(role, ()))
        claims: dict[str, Any] = {
            "sub": str(sub),
            "aud": audience if audience is not None else [self.audience],
            "iat": now,
            "exp": now + ttl_seconds,
            "role": role,
            "permissions": perms,
            "entity_scope": [],
            "session_id": str(uuid.uuid4()),
            "auth_method": "jwt",
            "entity_type": "user",
            "typ": typ,
        }
        if email is not None:
            claims["email"] = email
        if extra:
            claims.update(extra)
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def decode(self, token: str, *, typ: str = ACCESS) -> dict[str, Any]:
        """Verify signature, algorithm, audience, expiry and required claims; 401 on any failure."""
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                audience=self.audience,
                leeway=self._leeway,
                options={"require": ["exp", "iat", "sub", "aud"], "verify_iat": True},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthorized("token expired") from None
        except Exception:
            # Any decoding failure (bad base64, absurd exp, wrong alg, ...) is the caller's bad token.
            raise Unauthorized("invalid token") from None
        exp = claims["exp"]
        # NumericDate is a JSON number (pyjwt also lets "123" through); a far-future one is refused.
        numeric = isinstance(exp, int | float) and not isinstance(exp, bool)
        if not numeric or exp > time.time() + MAX_LIFETIME_SECONDS:
            raise Unauthorized("invalid token")
        if exp <= time.time():
            # The leeway absorbs clock skew on `iat` only: an expired token is refused at its `exp`.
            raise Unauthorized("token expired")
        if claims.get("typ", ACCESS) != typ:
            raise Unauthorized("invalid token")
        return claims

    def principal(self, token: str) -> Principal:
        return principal_from_claims(self.decode(token))


def _uuid_or_none(value: object) -> uuid.UUID | None:
    if value in (None, ""):
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise Unauthorized("invalid token") from None


def _uuid_or_ignore(value: object) -> uuid.UUID | None:
    """For claims other issuers may spell differently: not a UUID means not one of ours."""
    try:
        return uuid.UUID(str(value)) if value not in (None, "") else None
    except ValueError:
        return None


def _str_list(value: object, *, spaced: bool = False) -> frozenset[str]:
    """An array of strings; `spaced` also takes OAuth's space-separated string (delegation scopes)."""
    if value is None:
        return frozenset()
    if spaced and isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise Unauthorized("invalid token")


def principal_from_claims(claims: Mapping[str, Any]) -> Principal:
    user_id = _uuid_or_none(claims.get("sub"))
    if user_id is None:
        raise Unauthorized("invalid token")
    # A signature proves who issued a token, not that its claims make sense: a role we do not know
    # would otherwise be treated as a plain user's, and a room without its delegation as a delegation.
    role = claims.get("role", "User")
    if role not in ROLES:
        raise Unauthorized("invalid token")
    if claims.get("acting_as") not in (None, "") and not claims.get("delegation_token_id"):
        raise Unauthorized("invalid token")
    auth_method = str(claims.get("auth_method") or "jwt")
    delegated = auth_method == "delegation"
    return Principal(
        user_id=user_id,
        role=role,
        permissions=_str_list(claims.get("permissions")),
        email=claims.get("email") if isinstance(claims.get("email"), str) else None,
        session_id=str(claims["session_id"]) if claims.get("session_id") else None,
        auth_method=auth_method,
        acting_as=_uuid_or_none(claims.get("acting_as")) if delegated else None,
        delegation_scope=_str_list(claims.get("delegation_scope"), spaced=True) if delegated else frozenset(),
        delegation_token_id=str(claims["delegation_token_id"]) if claims.get("delegation_token_id") else None,
        # An API-key exchange names its key, so that revoking the key also stops the JWT.
        api_key_id=_uuid_or_ignore(claims.get("api_key_id")) if auth_method == "api_key" else None,
        claims=tuple(sorted((k, v) for k, v in claims.items() if isinstance(k, str))),
    )
