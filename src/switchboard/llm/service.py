"""The /v1 pipeline: auth → parse → context → resolve → credential → upstream → relay → meter."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
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
from switchboard.llm.call_attempt import first_attempt, with_cap
from switchboard.llm.context import prepare_call
from switchboard.llm.idempotent import claim_or_replay
from switchboard.llm.relay import relay_json, relay_stream
from switchboard.llm.services import Pipeline
from switchboard.surfaces.codec import Codec, Decoded
from switchboard.surfaces.request_body import parse_json_object


def request_id_of(request: Request) -> str:
    return str(request.scope.get("state", {}).get("request_id") or uuid.uuid4().hex)


Handler = Callable[[Pipeline, Principal, Headers, str, str, bytes], Awaitable[Response]]


def model_call(codec: Codec) -> Handler:
    """The handler of a surface's route: decode with its codec, then the one pipeline below."""

    async def handle(
        pipeline: Pipeline, principal: Principal, headers: Headers, path: str, request_id: str, raw: bytes
    ) -> Response:
        body = parse_json_object(raw)
        decoded = codec.decode(body, headers)
        return await _call(pipeline, principal, headers, path, request_id, raw, body, codec, decoded)

    return handle


async def _call(
    pipeline: Pipeline,
    principal: Principal,
    headers: Headers,
    path: str,
    request_id: str,
    raw: bytes,
    body: dict[str, Any],
    codec: Codec,
    decoded: Decoded,
) -> Response:
    """A /v1 model call, whichever way it was routed (fast path or framework)."""
    pipeline.db_outage.check()  # a call that could not be metered is not made (503, Retry-After)
    # A retry replays what the first call answered, whatever has changed since (a credential removed…).
    claim = await claim_or_replay(pipeline, principal, headers, path, raw)
    if isinstance(claim, Response):
        return claim
    try:
        async with SessionOnDemand(pipeline.sessionmaker, pipeline.engine) as sessions:
            call = await prepare_call(
                pipeline=pipeline,
                sessions=sessions,
                principal=principal,
                headers=headers,
                body=body,
                endpoint=codec.endpoint,
                stream=decoded.stream,
                request_id=request_id,
                provider_headers=decoded.provider_headers,
                from_agent=codec.for_agent,
            )
        first = first_attempt(call)
        if not codec.speaks(first.model.provider):
            # What this provider cannot be asked is refused before anything runs.
            codec.to_chat(first.body, None)
        ticket = await cached_answers.lookup(pipeline, first, headers)  # None unless caching applies
        hit = ticket.hit if ticket is not None else None
        # limits: 402/429 here, before the provider is called
        reservation = await ledger.begin(pipeline, first, claim, hit)
    except BaseException:
        if claim is not None:
            await pipeline.idempotency.release(claim)  # nothing ran: a retry may try again
        raise
    if ticket is not None and hit is not None:
        return await cached_answers.serve_hit(pipeline, first, reservation, ticket, hit, decoded.wants_usage)
    first = with_cap(first, reservation.gateway_cap)
    if decoded.stream:
        return await relay_stream(pipeline, first, reservation, ticket, decoded.wants_usage, codec)
    return await relay_json(pipeline, first, reservation, ticket, codec)


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
