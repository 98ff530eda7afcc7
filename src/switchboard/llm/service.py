"""The /v1 pipeline: auth → parse → context → resolve → credential → upstream → relay → meter."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.datastructures import Headers
from starlette.responses import Response

from switchboard.auth.principal import Principal
from switchboard.catalog.catalog import Catalog
from switchboard.catalog.selectors import parse_selector
from switchboard.db.on_demand import SessionOnDemand
from switchboard.errors import BadRequest, NotFound
from switchboard.llm import cached_answers, ledger
from switchboard.llm.call_attempt import Attempt, first_attempt, with_cap
from switchboard.llm.completions import chat_body, check_completions_body
from switchboard.llm.context import prepare_call
from switchboard.llm.idempotent import claim_or_replay
from switchboard.llm.relay import relay_json, relay_stream
from switchboard.llm.request_body import (
    check_chat_body,
    check_embeddings_body,
    check_generation_fields,
    client_wants_usage,
    parse_json_object,
)
from switchboard.llm.services import Pipeline
from switchboard.surfaces import messages_request, responses_request


def request_id_of(request: Request) -> str:
    return str(request.scope.get("state", {}).get("request_id") or uuid.uuid4().hex)


async def chat_completions(
    pipeline: Pipeline, principal: Principal, headers: Headers, path: str, request_id: str, raw: bytes
) -> Response:
    body = parse_json_object(raw)
    stream = check_chat_body(body)
    arrival = _Arrival(pipeline, principal, headers, path, request_id, raw, body)
    return await _call(arrival, "chat.completions", stream, client_wants_usage(body))


async def completions(
    pipeline: Pipeline, principal: Principal, headers: Headers, path: str, request_id: str, raw: bytes
) -> Response:
    """The legacy text-completion API, relayed to `openai`, over chat for other kinds."""
    body = parse_json_object(raw)
    check_completions_body(body)
    stream = check_generation_fields(body)
    arrival = _Arrival(pipeline, principal, headers, path, request_id, raw, body)
    return await _call(arrival, "completions", stream, client_wants_usage(body))


async def responses(
    pipeline: Pipeline, principal: Principal, headers: Headers, path: str, request_id: str, raw: bytes
) -> Response:
    """OpenAI's Responses API (SPEC §16), relayed to `openai`, over chat for other kinds."""
    body = parse_json_object(raw)
    stream = responses_request.check_responses_body(body)
    surface = _Surface(from_agent=responses_request.from_agent)
    arrival = _Arrival(pipeline, principal, headers, path, request_id, raw, body, surface)
    return await _call(arrival, "responses", stream, False)


async def messages(
    pipeline: Pipeline, principal: Principal, headers: Headers, path: str, request_id: str, raw: bytes
) -> Response:
    """Anthropic's Messages API (SPEC §16), relayed to `anthropic`, over chat for other kinds."""
    body = parse_json_object(raw)
    stream = messages_request.check_messages_body(body)
    lines = messages_request.provider_headers(headers)
    surface = _Surface(lines, messages_request.from_agent, _check_messages)
    arrival = _Arrival(pipeline, principal, headers, path, request_id, raw, body, surface)
    return await _call(arrival, "messages", stream, False)


def _check_messages(first: Attempt) -> None:
    if first.model.provider != "anthropic":
        messages_request.chat_body(first.body)  # refused before anything runs, as in `_call`


async def embeddings(
    pipeline: Pipeline, principal: Principal, headers: Headers, path: str, request_id: str, raw: bytes
) -> Response:
    body = parse_json_object(raw)
    check_embeddings_body(body)
    arrival = _Arrival(pipeline, principal, headers, path, request_id, raw, body)
    return await _call(arrival, "embeddings", False, False)


@dataclass(frozen=True, slots=True)
class _Surface:
    """What a surface adds to a call of the pipeline's (chat's needs none of it)."""

    # Header lines for a provider that speaks the surface (Messages: anthropic-version, -beta).
    provider_headers: bytes = b""
    # An agent's body (chat's shape, agents/apply.py) in the surface's shape.
    from_agent: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # What the surface refuses to carry to the first attempt's provider, refused before anything runs.
    check: Callable[[Attempt], None] | None = None


_CHAT_LIKE = _Surface()


@dataclass(frozen=True, slots=True)
class _Arrival:
    """What a /v1 model call arrived with, whichever way it was routed (fast path or framework)."""

    pipeline: Pipeline
    principal: Principal
    headers: Headers
    path: str
    request_id: str
    raw: bytes
    body: dict[str, Any]
    surface: _Surface = _CHAT_LIKE


async def _call(request: _Arrival, endpoint: str, stream: bool, wants_usage: bool) -> Response:
    pipeline = request.pipeline
    pipeline.db_outage.check()  # a call that could not be metered is not made (503, Retry-After)
    # A retry replays what the first call answered, whatever has changed since (a credential removed…).
    claim = await claim_or_replay(pipeline, request.principal, request.headers, request.path, request.raw)
    if isinstance(claim, Response):
        return claim
    kind = _RELAY_KINDS[endpoint]
    try:
        async with SessionOnDemand(pipeline.sessionmaker, pipeline.engine) as sessions:
            call = await prepare_call(
                pipeline=pipeline,
                sessions=sessions,
                principal=request.principal,
                headers=request.headers,
                body=request.body,
                endpoint=endpoint,
                stream=stream,
                request_id=request.request_id,
                provider_headers=request.surface.provider_headers,
                from_agent=request.surface.from_agent,
            )
        first = first_attempt(call)
        if request.surface.check is not None:
            request.surface.check(first)
        over_chat = _OVER_CHAT.get(kind)
        if over_chat is not None and first.model.provider != "openai":
            over_chat(first.body)  # what this provider cannot be asked is refused before anything runs
        ticket = await cached_answers.lookup(pipeline, first, request.headers)  # None unless caching applies
        hit = ticket.hit if ticket is not None else None
        # limits: 402/429 here, before the provider is called
        reservation = await ledger.begin(pipeline, first, claim, hit)
    except BaseException:
        if claim is not None:
            await pipeline.idempotency.release(claim)  # nothing ran: a retry may try again
        raise
    if ticket is not None and hit is not None:
        return await cached_answers.serve_hit(pipeline, first, reservation, ticket, hit, wants_usage)
    first = with_cap(first, reservation.gateway_cap)
    if stream:
        return await relay_stream(pipeline, first, reservation, ticket, wants_usage, kind)
    return await relay_json(pipeline, first, reservation, ticket, kind)


# How each endpoint's call reaches the provider (llm/relay.py); `completions` turns into
# `completions_over_chat` for an attempt whose provider has no text-completion endpoint.
_RELAY_KINDS = {
    "chat.completions": "chat",
    "embeddings": "embeddings",
    "completions": "completions",
    "responses": "responses",
    "messages": "messages",
}
# The translations over chat of the kinds above, run once before the call to refuse what they cannot carry.
_OVER_CHAT = {"completions": chat_body, "responses": responses_request.chat_body}


def _model_object(model_id: str, owned_by: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": owned_by}


async def _usable_ids(
    pipeline: Pipeline, principal: Principal, headers: Headers
) -> tuple[dict[str, str], set[str]]:
    """Every selector the caller can use right now, mapped to its owner, in catalog order."""
    catalog: Catalog = pipeline.catalog
    room_raw = headers.get("x-working-group-id")
    try:
        room_id = uuid.UUID(room_raw) if room_raw else principal.acting_as
    except ValueError:
        raise BadRequest("X-Working-Group-Id must be a UUID", param="X-Working-Group-Id") from None
    providers = set((await pipeline.credentials.in_reach(principal, room_id)).keys())
    usable: dict[str, str] = {}
    for entry in catalog.models:
        if entry.provider in providers:
            usable[entry.key] = entry.provider
    for name, entry in catalog.unambiguous_bare_names().items():
        if entry.provider in providers:
            usable.setdefault(name, entry.provider)
    for alias, target in catalog.aliases.items():
        if target.partition("/")[0] in providers:
            usable[alias] = "switchboard"
    if any(key.partition("/")[0] in providers for key in catalog.default):
        usable["default"] = "switchboard"
    for tag, entries in catalog.by_tag.items():
        if any(entry.provider in providers for entry in entries):
            usable[f"tag:{tag}"] = "switchboard"
    return usable, providers


async def list_models(pipeline: Pipeline, principal: Principal, headers: Headers) -> dict[str, Any]:
    usable, _ = await _usable_ids(pipeline, principal, headers)
    return {"object": "list", "data": [_model_object(mid, owner) for mid, owner in usable.items()]}


async def get_model(pipeline: Pipeline, principal: Principal, headers: Headers, model: str) -> dict[str, Any]:
    usable, providers = await _usable_ids(pipeline, principal, headers)
    if model in usable:
        return _model_object(model, usable[model])
    selector = parse_selector(model)
    # An unlisted exact model is usable when its provider is in reach (SPEC §6).
    if selector.kind == "exact" and selector.provider in providers:
        return _model_object(model, selector.provider or "")
    raise NotFound(f"The model `{model}` does not exist", param="model", openai_code="model_not_found")
