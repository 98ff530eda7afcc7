"""Who is changing things in a session: read from the request it serves, or set by the CLI or a reload."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from switchboard.audit.events import SYSTEM, Actor, Origin
from switchboard.auth.principal import Principal

# session.info keys: the request's ASGI scope (db/session.py puts it there), or an explicit origin.
SCOPE_KEY = "request_scope"
ORIGIN_KEY = "audit_origin"
# Who changes things in a session that serves no request: the CLI sets itself; else the gateway.
DEFAULT: ContextVar[Origin | None] = ContextVar("switchboard_audit_origin", default=None)


def actor_of(principal: Principal) -> Actor:
    return Actor(
        user_id=str(principal.user_id),
        role=principal.role,
        auth_method=principal.auth_method,
        api_key_id=str(principal.api_key_id) if principal.api_key_id else None,
        delegation_token_id=principal.delegation_token_id,
    )


def origin_of_scope(scope: Mapping[str, Any], actor: Actor | None = None) -> Origin:
    state = scope.get("state") or {}
    if actor is None:
        principal = state.get("principal")
        actor = actor_of(principal) if isinstance(principal, Principal) else Actor(auth_method="anonymous")
    client = scope.get("client")
    return Origin(actor=actor, request_id=state.get("request_id"), ip=client[0] if client else None)


def origin_of(info: Mapping[str, Any]) -> Origin:
    explicit = info.get(ORIGIN_KEY)
    if isinstance(explicit, Origin):
        return explicit
    scope = info.get(SCOPE_KEY)
    if scope is not None:
        return origin_of_scope(scope)
    return DEFAULT.get() or Origin(actor=SYSTEM)
