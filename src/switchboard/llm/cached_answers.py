"""The response cache's stage before a /v1 call's attempt loop (SPEC §23): look up, and serve a hit
as the call's answer (metered and settled, no provider call); cache/remember.py stores answers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import Response

from switchboard.cache.entry import CachedAnswer
from switchboard.cache.request import (
    CACHED_ENDPOINTS,
    HEADER,
    CacheTicket,
    body_digest,
    entry_key,
    header_ttl,
)
from switchboard.llm.call_attempt import Attempt
from switchboard.llm.idempotent import stored_from
from switchboard.llm.ledger import Reservation, settle
from switchboard.llm.outcomes import build_outcome
from switchboard.llm.relay import SSE_TYPE, gateway_headers
from switchboard.llm.services import Pipeline
from switchboard.llm.sse_response import SSEResponse


async def lookup(pipeline: Pipeline, first: Attempt, headers: Headers) -> CacheTicket | None:
    """None when the cache does not apply to the call (no hashing, no database); else its ticket,
    with the stored answer when there is one, in the scope of the call's `first` attempt. A
    malformed `x-switchboard-cache` is a 400."""
    call = first.request
    if call.endpoint not in CACHED_ENDPOINTS:
        return None
    model = first.model
    raw = headers.get(HEADER)
    ttl = header_ttl(raw) if raw is not None else pipeline.catalog.cache_ttl(call.selector, model)
    store = pipeline.cache
    if not ttl or store is None:  # off for this model, or the request said no-store
        return None
    # The request's body: the digest leaves `model` out, which the key's scope half carries.
    digest = body_digest(call.endpoint, call.stream, call.body, call.provider_headers)
    key = entry_key(digest, model.provider, model.model, first.credential)
    hit = await store.get(key)
    store.counted("miss" if hit is None else "hit")
    return CacheTicket(ttl_s=ttl, digest=digest, key=key, hit=hit)


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body


async def serve_hit(
    pipeline: Pipeline,
    first: Attempt,
    reservation: Reservation,
    ticket: CacheTicket,
    answer: CachedAnswer,
    wants_usage: bool,
) -> Response:
    """The stored `answer`, as JSON or replayed as the stream it was (the usage chunk only for a chat
    client that asked), recorded `ok` with `cache_hit` and its original tokens, before it is sent."""
    call = first.request
    headers = {**gateway_headers(first, reservation, ticket), HEADER: "hit"}
    if answer.stream:
        body = answer.replayed(wants_usage)
        content_type = SSE_TYPE
    else:
        body, content_type = answer.body, "application/json"
    stored = None
    if reservation.claim is not None:
        stored = stored_from(200, {**headers, "content-type": content_type}, body)
    ttft_ms = int((time.perf_counter() - call.started) * 1000) if answer.stream else None
    outcome = build_outcome(first, status="ok", usage=answer.usage, ttft_ms=ttft_ms, cache_hit=True)
    await settle(pipeline, first, reservation, outcome, stored)
    if answer.stream:
        return SSEResponse(_once(body), headers=headers)
    return Response(body, media_type="application/json", headers=headers)
