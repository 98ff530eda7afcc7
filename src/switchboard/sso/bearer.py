"""Bearer tokens from the SSO issuer on every API (SPEC §24): plugged into the Authenticator, which
keeps each verified token until it expires, so a client's next calls pay nothing here."""

from __future__ import annotations

import base64
import binascii
import json

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.auth.principal import ROLE_DEFAULT_PERMISSIONS, Principal
from switchboard.sso import accounts
from switchboard.sso.config import OidcSettings
from switchboard.sso.verify import TokenVerifier

AUTH_METHOD = "sso"


def unverified_issuer(token: str) -> object:
    """The `iss` a JWT claims, read without verifying anything: only to pick the verifier."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    return payload.get("iss") if isinstance(payload, dict) else None


class SsoBearer:
    def __init__(
        self, settings: OidcSettings, verifier: TokenVerifier, sessionmaker: async_sessionmaker[AsyncSession]
    ) -> None:
        self._settings = settings
        self._verifier = verifier
        self._sessionmaker = sessionmaker

    def owns(self, token: str) -> bool:
        return unverified_issuer(token) == self._settings.issuer

    async def principal(self, token: str) -> Principal:
        claims = await self._verifier.claims(token)
        role = self._settings.role_of(claims)
        user = await accounts.account(self._sessionmaker, self._settings.issuer, claims, role, refresh=False)
        sid = claims.get("sid")
        return Principal(
            user_id=user.id,
            role=role,
            permissions=frozenset(ROLE_DEFAULT_PERMISSIONS.get(role, ())),
            email=accounts.email_of(claims) or user.email,
            session_id=sid if isinstance(sid, str) else None,
            auth_method=AUTH_METHOD,
            claims=tuple(sorted((k, claims[k]) for k in ("exp", "iat", "iss") if k in claims)),
        )
