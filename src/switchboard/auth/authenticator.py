"""Turns an Authorization header into a Principal: JWTs here, API keys and revocations via hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from switchboard.auth.principal import Principal
from switchboard.auth.tokens import TokenCodec
from switchboard.errors import Unauthorized

API_KEY_PREFIX = "svc_api_"

ApiKeyResolver = Callable[[str], Awaitable[Principal]]
RevocationCheck = Callable[[Principal], Awaitable[None]]


class Authenticator:
    def __init__(self, codec: TokenCodec) -> None:
        self.codec = codec
        # Set by the embedded-auth domain at start; without it API keys are refused.
        self.api_key_resolver: ApiKeyResolver | None = None
        # Raises Unauthorized for a revoked delegation token, or a JWT exchanged for a revoked API
        # key; set by the embedded-auth domain.
        self.revocation_check: RevocationCheck | None = None

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
        principal = self.codec.principal(token)
        if (principal.is_delegated or principal.api_key_id is not None) and self.revocation_check is not None:
            await self.revocation_check(principal)
        return principal
