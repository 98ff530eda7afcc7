"""FastAPI dependencies: the current principal and the permission and writer gates."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request

from switchboard.auth.authenticator import authorization_of
from switchboard.auth.context import AuthContext
from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden


async def current_principal(request: Request) -> Principal:
    cached = getattr(request.state, "principal", None)
    if isinstance(cached, Principal):
        return cached
    principal: Principal = await request.app.state.authenticator.authenticate(
        authorization_of(request.headers, request.url.path)
    )
    request.state.principal = principal
    return principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


def require_permission(
    name: str, *, or_roles: tuple[str, ...] = ("Admin", "SuperAdmin")
) -> Callable[[Principal], Awaitable[Principal]]:
    async def dependency(principal: CurrentPrincipal) -> Principal:
        if not (principal.has_permission(name) or principal.role in or_roles):
            raise Forbidden(f"Insufficient permissions: {name}")
        return principal

    return dependency


async def _writer(principal: CurrentPrincipal) -> Principal:
    if principal.is_viewer:
        raise Forbidden("Viewer role is read-only")
    if not principal.delegation_allows("write"):
        raise Forbidden("delegation scope 'write' required")
    return principal


WriterPrincipal = Annotated[Principal, Depends(_writer)]


def auth_context(request: Request) -> AuthContext:
    context: AuthContext = request.app.state.auth
    return context


Auth = Annotated[AuthContext, Depends(auth_context)]
