"""Turns an Authorization header into a Principal: JWTs here, API keys and revocations via hooks."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from switchboard.auth.principal import Principal
from switchboard.auth.tokens import TokenCodec
from switchboard.errors import Unauthorized
from switchboard.wire.paths import on_anthropic_surface

API_KEY_PREFIX = "svc_api_"
# Verified JWTs are remembered until they expire, so a client's next call skips the HMAC and claim
# checks; revocations (delegation, exchanged API keys) are still checked on every call below.
VERIFIED_CACHE_SIZE = 10_000

ApiKeyResolver = Callable[[str], Awaitable[Principal]]
RevocationCheck = Callable[[Principal], Awaitable[None]]


class ExternalIssuer(Protocol):
    """Tokens of another issuer accepted as ours (single sign-on, SPEC §24)."""

    def owns(self, token: str) -> bool:
        """Whether the token names this issuer (unverified: it only picks the verifier)."""

    async def principal(self, token: str) -> Principal:
        """The verified caller, or Unauthorized."""


def authorization_of(headers: Mapping[str, str], path: str) -> str | None:
    """The bearer a request presents: its `Authorization` header, or on Anthropic's surface
    (/v1/messages…) also `x-api-key`, where Anthropic's SDKs and Claude Code put the key (SPEC §16)."""
    value = headers.get("authorization")
    if value or not on_anthropic_surface(path):
        return value
    key = (headers.get("x-api-key") or "").strip()
    return f"Bearer {key}" if key else None


class Authenticator:
    def __init__(self, codec: TokenCodec) -> None:
        self.codec = codec
        # Set by the embedded-auth domain at start; without it API keys are refused.
        self.api_key_resolver: ApiKeyResolver | None = None
        # Raises Unauthorized for a revoked delegation token, or a JWT exchanged for a revoked API
        # key; set by the embedded-auth domain.
        self.revocation_check: RevocationCheck | None = None
        # Set by the sso domain when SWITCHBOARD_OIDC_ISSUER is configured.
        self.external: ExternalIssuer | None = None
        self._verified: dict[str, tuple[float, Principal]] = {}

    @staticmethod
    def bearer(authorization: str | None) -> str:
        if not authorization:
            raise Unauthorized("missing bearer token")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("missing bearer token")
        return token

    async def authenticate(self, authorization: str | None) -> Principal:
        token = self.bearer(authorization)
        if token.startswith(API_KEY_PREFIX):
            if self.api_key_resolver is None:
                raise Unauthorized("invalid token")
            return await self.api_key_resolver(token)
        principal = self._cached(token)
        if principal is None:
            if self.external is not None and self.external.owns(token):
                principal = self._remember(token, await self.external.principal(token))
            else:
                principal = self._remember(token, self.codec.principal(token))
        if (principal.is_delegated or principal.api_key_id is not None) and self.revocation_check is not None:
            await self.revocation_check(principal)
        return principal

    def _cached(self, token: str) -> Principal | None:
        cached = self._verified.get(token)
        if cached is not None and cached[0] > time.time():
            return cached[1]
        return None

    def _remember(self, token: str, principal: Principal) -> Principal:
        expires = dict(principal.claims).get("exp")
        if isinstance(expires, int | float):
            if len(self._verified) >= VERIFIED_CACHE_SIZE:
                self._verified.clear()  # crude but bounded; a miss only costs one verification
            self._verified[token] = (float(expires), principal)
        return principal
