"""Refuses a signed token whose delegation or API key was revoked: one indexed read per request."""

from __future__ import annotations

from switchboard.auth import api_keys, delegation
from switchboard.auth.context import AuthContext
from switchboard.auth.principal import Principal
from switchboard.errors import Unauthorized


async def check(context: AuthContext, principal: Principal) -> None:
    # No cache on purpose: a revocation must hold at once on every replica.
    async with context.reader() as session:
        if principal.is_delegated and principal.delegation_token_id is not None:
            if await delegation.is_revoked(session, principal.delegation_token_id):
                raise Unauthorized("token revoked")
        elif principal.api_key_id is not None and await api_keys.is_revoked(session, principal.api_key_id):
            raise Unauthorized("token revoked")
