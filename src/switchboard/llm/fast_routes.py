"""The /v1 model-call POSTs (surfaces/registry.py) as plain ASGI handlers.

These routes carry the traffic. Through FastAPI each call also paid for routing, dependency
solving, a Request object and four layers of exception middleware: about a fifth of the gateway's
CPU per call at concurrency 1 (bench/run --profile). `app.py` sends them here instead; the FastAPI
routes in router.py stay, for OpenAPI and for an app mounted under a prefix, and answer the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard.auth.authenticator import authorization_of
from switchboard.error_shapes import switchboard_error_response
from switchboard.errors import SwitchboardError
from switchboard.llm import count_tokens
from switchboard.llm.client_watch import ClientWatch
from switchboard.llm.service import Handler, model_call
from switchboard.llm.services import Pipeline
from switchboard.surfaces.registry import COUNT_TOKENS, ROUTES

# Routes the gateway answers itself, without a codec (surfaces/registry.py names them).
_OWN_ANSWERS: dict[str, Handler] = {COUNT_TOKENS: count_tokens.count_tokens}

HANDLERS: dict[str, Handler] = {
    route.full_path: model_call(route.codec) if route.codec is not None else _OWN_ANSWERS[route.path]
    for route in ROUTES
}


def takes(scope: Scope) -> bool:
    return scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in HANDLERS


class _ClientGone(Exception):
    pass


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def endpoint(pipeline: Pipeline) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await serve(pipeline, scope, receive, send)

    return app


async def serve(pipeline: Pipeline, scope: Scope, receive: Receive, send: Send) -> None:
    """One model call; runs inside RequestContextMiddleware (request id, body limit, last-resort 500)."""
    path: str = scope["path"]
    try:
        headers = Headers(scope=scope)
        principal = await pipeline.authenticator.authenticate(authorization_of(headers, path))
        raw = await _read_body(receive)
        handler = HANDLERS[path](pipeline, principal, headers, path, scope["state"]["request_id"], raw)
        response = await until_client_leaves(handler, receive)
    except SwitchboardError as error:
        response = switchboard_error_response(error, path)
    except _ClientGone:
        return
    await response(scope, receive, send)


async def until_client_leaves(call: Awaitable[Response], receive: Receive) -> Response:
    """Runs the call, cancelling it the moment the client disconnects: a non-streamed answer may take
    the provider a minute, which nobody would read (and the caller would be billed for). A stream's
    SSEResponse watches on its own once it starts."""
    watch = ClientWatch(receive)
    try:
        return await call
    except asyncio.CancelledError:
        if not watch.ours():
            raise
        raise _ClientGone from None
    finally:
        watch.stop()
