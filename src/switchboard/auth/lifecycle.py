"""Embedded auth start-up: build the shared context and plug API keys and revocation into auth."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard.auth import api_keys, revocation
from switchboard.auth.authenticator import Authenticator
from switchboard.auth.context import AuthContext
from switchboard.auth.principal import Principal
from switchboard.settings import Settings


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    authenticator: Authenticator = app.state.authenticator
    context = AuthContext.build(authenticator.codec, settings.jwt_secret.get_secret_value(), app.state.engine)
    app.state.auth = context

    async def resolve_key(presented: str) -> Principal:
        return await api_keys.principal_for(context, presented)

    async def check_revoked(principal: Principal) -> None:
        await revocation.check(context, principal)

    authenticator.api_key_resolver = resolve_key
    authenticator.revocation_check = check_revoked


async def shutdown(app: FastAPI) -> None:
    authenticator: Authenticator = app.state.authenticator
    authenticator.api_key_resolver = None
    authenticator.revocation_check = None
