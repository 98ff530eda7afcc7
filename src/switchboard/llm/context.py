"""Prepares a /v1 call: room and economy context, agent, selector, model and credential (SPEC §5).

What the client asked is decoded once into a `CallRequest`, which nothing changes afterwards: what
changes per attempt is an `Attempt` (llm/call_attempt.py), and what `ledger.begin` holds for the
call is its `Reservation`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from starlette.datastructures import Headers

from switchboard.auth.principal import Principal
from switchboard.catalog.catalog import Catalog
from switchboard.catalog.selectors import Selector, parse_selector
from switchboard.db.on_demand import SessionOnDemand
from switchboard.errors import BadRequest, Forbidden
from switchboard.llm.services import Pipeline
from switchboard.metering.resolution import resolve_economy
from switchboard.routing.plan import plan_routes
from switchboard.routing.request import take_models, take_preferences
from switchboard.routing.route import Route

MAX_HEADER_ID = 128


class CallRequest(NamedTuple):
    """A /v1 model call as the client asked it, decoded once; never changed afterwards."""

    principal: Principal
    request_id: str
    endpoint: str
    selector: str
    # The body as received, less the fields that only steer routing (`models`, `provider`), and in
    # an agent's shape for an `agent:` selector. Never changed: an attempt's body is built from it.
    body: dict[str, Any]
    stream: bool
    room_id: uuid.UUID | None
    economy_id: uuid.UUID
    agent_id: str | None
    session_id: str | None
    idempotency_key: str | None
    started: float
    # Every attempt the call may make, in order (routing/plan.py).
    routes: Sequence[Route]
    # Header lines for a provider that speaks the call's surface (anthropic-version, anthropic-beta).
    provider_headers: bytes = b""


def _room_from(principal: Principal, headers: Headers) -> uuid.UUID | None:
    raw = headers.get("x-working-group-id")
    if raw:
        try:
            return uuid.UUID(raw)
        except ValueError:
            raise BadRequest("X-Working-Group-Id must be a UUID", param="X-Working-Group-Id") from None
    return principal.acting_as


def _session_id(principal: Principal, headers: Headers) -> str | None:
    raw = headers.get("x-session-id")
    if raw:
        if len(raw) > MAX_HEADER_ID:
            raise BadRequest("X-Session-Id is too long", param="X-Session-Id")
        return raw
    return principal.session_id


async def prepare_call(
    *,
    pipeline: Pipeline,
    sessions: SessionOnDemand,
    principal: Principal,
    headers: Headers,
    body: dict[str, Any],
    endpoint: str,
    stream: bool,
    request_id: str,
    provider_headers: bytes = b"",
    from_agent: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> CallRequest:
    """`from_agent`: the surface's shape of an agent's body (agents/apply.py writes chat's)."""
    started = time.perf_counter()
    if not principal.can_write:
        raise Forbidden("this token may not call models (Viewer role or read-only delegation)")
    catalog: Catalog = pipeline.catalog
    listed, preferences = None, None
    if "models" in body or "provider" in body:
        # `models` and `provider` steer routing and never reach the provider; they are taken out of
        # a copy, leaving the client's body as it came.
        body = dict(body)
        listed = take_models(body) if "models" in body else None
        preferences = take_preferences(body) if "provider" in body else None
    if listed is not None and body.get("model") is None:
        selector = listed[0]  # `model` may be omitted when `models` is given
    else:
        selector = parse_selector(body.get("model"))
    room_id = _room_from(principal, headers)
    agent_id: str | None = None
    agent_economy: uuid.UUID | None = None
    if selector.kind == "agent":
        from switchboard.agents.apply import apply_agent

        applied = await apply_agent(sessions(), principal, selector.agent_id or "", body)
        agent_id = applied.agent_id
        agent_economy = applied.economy_id
        body = applied.body if from_agent is None else from_agent(applied.body)
        if room_id is None:
            room_id = applied.room_id
        selector = parse_selector(applied.selector)
        if selector.kind == "agent":
            raise BadRequest("an agent's selector cannot name another agent", param="model")
    selectors: list[Selector] = [selector]
    if listed is not None:
        selectors.extend(entry for entry in listed if entry != selector)
    # spendable also checks room membership (404 for a room the caller is not in).
    reach = await pipeline.credentials.spendable(principal, room_id)
    scopes = _SCOPES_WITH_ROOM if room_id else _SCOPES
    routes = plan_routes(catalog, selectors, preferences, reach, pipeline.routing, scopes)
    economy = await resolve_economy(sessions, principal, headers.get("x-economy-id"), agent_economy, room_id)
    return CallRequest(
        principal=principal,
        request_id=request_id,
        endpoint=endpoint,
        selector=selector.text if agent_id is None else f"agent:{agent_id}",
        body=body,
        stream=stream,
        room_id=room_id,
        economy_id=economy.id,
        agent_id=agent_id,
        session_id=_session_id(principal, headers),
        idempotency_key=headers.get("idempotency-key"),
        started=started,
        routes=routes,
        provider_headers=provider_headers,
    )


_SCOPES = ("user", "deployment")
_SCOPES_WITH_ROOM = ("room", "user", "deployment")
