"""ASGI middleware applying Idempotency-Key to authenticated POSTs outside /v1 (which handles its own)."""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.auth.principal import Principal
from switchboard.error_shapes import error_response
from switchboard.errors import SwitchboardError, Unauthorized
from switchboard.idempotency.service import (
    IdempotencyStore,
    New,
    Replay,
    StoredResponse,
    check_key,
    fingerprint,
    refusal,
    releases_key,
)
from switchboard.kit.asgi import header

log = logging.getLogger("switchboard.idempotency")

# /v1 replays a streamed call as a stream, so it claims keys itself (see docs/ARCHITECTURE.md).
# /auth answers carry tokens and one-time API keys, which must never be stored, so they are not replayed.
SELF_HANDLED_PREFIXES = ("/v1/", "/auth/")
# Headers that describe the outcome; per-response ones (date, x-request-id, length) are not stored.
STORED_HEADERS = frozenset({"content-type", "location", "etag", "link", "cache-control", "retry-after"})
STORED_HEADER_PREFIX = "x-switchboard-"
REPLAYED_HEADER = (b"idempotent-replayed", b"true")


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The common path: not a POST, or no header. Nothing is read or buffered.
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        raw_key = header(scope, b"idempotency-key")
        store: IdempotencyStore | None = getattr(scope["app"].state, "idempotency", None)
        if raw_key is None or store is None or scope["path"].startswith(SELF_HANDLED_PREFIXES):
            await self.app(scope, receive, send)
            return
        principal = await _principal(scope)
        if principal is None:
            # Anonymous (or a bad token the route will refuse): keys are scoped to a caller.
            await self.app(scope, receive, send)
            return
        try:
            key = check_key(raw_key.decode("latin-1"))
        except SwitchboardError as error:
            await error_response(error, scope["path"])(scope, receive, send)
            return
        read = await _read_body(receive)
        if read is None:
            return  # the client left before sending its body
        body, replay_receive = read
        query = scope.get("query_string", b"").decode("latin-1")
        request_hash = fingerprint("POST", scope["path"], body, query)
        result = await store.begin(str(principal.user_id), key, request_hash)
        if isinstance(result, New):
            await _run_and_store(self.app, scope, replay_receive, send, store, result)
        elif isinstance(result, Replay):
            await _send_stored(send, result.stored)
        else:
            await error_response(refusal(result), scope["path"])(scope, receive, send)


async def _principal(scope: Scope) -> Principal | None:
    authorization = header(scope, b"authorization")
    if authorization is None:
        return None
    try:
        authenticator = scope["app"].state.authenticator
        principal: Principal = await authenticator.authenticate(authorization.decode("latin-1"))
    except Unauthorized:
        return None
    # The route's `current_principal` dependency reuses it instead of verifying the token twice.
    scope.setdefault("state", {})["principal"] = principal
    return principal


async def _read_body(receive: Receive) -> tuple[bytes, Receive] | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    delivered = False

    async def replay_receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay_receive


async def _send_stored(send: Send, stored: StoredResponse) -> None:
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in stored.headers]
    headers += [(b"content-length", str(len(stored.body)).encode()), REPLAYED_HEADER]
    await send({"type": "http.response.start", "status": stored.status, "headers": headers})
    await send({"type": "http.response.body", "body": stored.body, "more_body": False})


async def _run_and_store(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, store: IdempotencyStore, new: New
) -> None:
    """Run the route; hold its response until the outcome is stored (or the key released) first.

    Storing before the client sees the answer means that a client who got a response and retries
    always gets the replay, never a second execution.
    """
    start: Message | None = None
    chunks: list[bytes] = []
    settled = False

    async def capture(message: Message) -> None:
        nonlocal start, settled
        if message["type"] == "http.response.start":
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        body = b"".join(chunks)
        status = int(start["status"])
        if releases_key(status):
            await store.release(new.claim)
        else:
            await store.complete(new.claim, StoredResponse(status, _kept_headers(start), body))
        settled = True
        await send(start)
        await send({"type": "http.response.body", "body": body, "more_body": False})

    try:
        await app(scope, receive, capture)
    finally:
        if not settled:
            # The route raised (the error handler answers 500) or was cancelled: let a retry run.
            await store.release(new.claim)


def _kept_headers(start: Message) -> tuple[tuple[str, str], ...]:
    kept = []
    for raw_name, raw_value in start.get("headers", []):
        name = bytes(raw_name).decode("latin-1").lower()
        if name in STORED_HEADERS or name.startswith(STORED_HEADER_PREFIX):
            kept.append((name, bytes(raw_value).decode("latin-1")))
    return tuple(kept)
