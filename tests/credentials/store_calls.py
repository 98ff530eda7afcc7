"""Calls into a running gateway's CredentialStore, on the gateway's own event loop."""

from __future__ import annotations

import uuid
from typing import Any

from switchboard.auth.principal import Principal
from switchboard.credentials.service import CredentialRef
from tests.support.gateway import Gateway, User


def principal_of(gateway: Gateway, user: User) -> Principal:
    """Exactly what the HTTP layer derives from the user's token."""
    principal: Principal = gateway.app.state.authenticator.codec.principal(user.token)
    return principal


def in_reach(gateway: Gateway, user: User, room_id: str | None = None) -> dict[str, CredentialRef]:
    store = gateway.app.state.credentials
    room = uuid.UUID(room_id) if room_id else None
    found: dict[str, CredentialRef] = gateway.server.call_soon(
        store.in_reach(principal_of(gateway, user), room)
    )
    return found


def reveal(gateway: Gateway, ref: CredentialRef) -> str:
    secret: Any = gateway.server.call_soon(gateway.app.state.credentials.reveal(ref))
    value: str = secret.reveal()
    return value


def move_ciphertexts(gateway: Gateway, moves: dict[str, str]) -> None:
    """Overwrite rows' ciphertexts with other rows' ({target id: source id}), as someone with write
    access to the database could; all sources are read before anything is written."""
    from sqlalchemy import select, update

    from switchboard.credentials.models import LlmCredential

    async def run() -> None:
        async with gateway.app.state.engine.begin() as conn:
            sealed = {
                source: await conn.scalar(
                    select(LlmCredential.sealed_secret).where(LlmCredential.id == uuid.UUID(source))
                )
                for source in moves.values()
            }
            for target, source in moves.items():
                await conn.execute(
                    update(LlmCredential)
                    .where(LlmCredential.id == uuid.UUID(target))
                    .values(sealed_secret=sealed[source])
                )
        gateway.app.state.credentials.invalidate()

    gateway.server.call_soon(run())
