"""ASGI middleware: request id, body-size limit, last-resort 500 and the one log line per request."""

from __future__ import annotations

import logging
import re
import time
import uuid
from sys import exc_info

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from switchboard.db.outage import lost_database
from switchboard.error_shapes import error_body, surface_for
from switchboard.errors import PayloadTooLarge, SwitchboardError
from switchboard.kit.asgi import header
from switchboard.observability import access

log = logging.getLogger("switchboard.access")
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


class _BodyTooLarge(Exception):
    pass


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        given = header(scope, b"x-request-id")
        given_text = given.decode("latin-1") if given else ""
        request_id = given_text if _VALID_REQUEST_ID.match(given_text) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        telemetry, context_token = access.request_started(scope, request_id)
        rid_header = (b"x-request-id", request_id.encode())
        path = scope["path"]
        limit = self.max_body_bytes
        too_large = PayloadTooLarge(f"request body over {limit} bytes")
        status = 0
        response_started = False
        overflowed = False

        async def emit(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                telemetry.first_byte = time.perf_counter()
                message["headers"] = [*message.get("headers", []), rid_header]
            await send(message)

        async def send_from_app(message: Message) -> None:
            # Whatever the app made of a body cut off at the limit (FastAPI calls it a 400), it is a 413.
            if overflowed:
                if message["type"] == "http.response.start" and not response_started:
                    await _send_error(emit, path, too_large)
                return
            await emit(message)

        received = 0

        async def limited_receive() -> Message:
            nonlocal received, overflowed
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    overflowed = True
                    raise _BodyTooLarge
            return message

        try:
            declared = header(scope, b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                await _send_error(emit, path, too_large)
                return
            await self.app(scope, limited_receive, send_from_app)
        except Exception:
            if response_started:
                raise
            if overflowed:
                await _send_error(emit, path, too_large)
                return
            error: SwitchboardError | None = lost_database(scope, exc_info()[1])
            if error is None:
                # The stack trace goes to the log under the request id, never to the client.
                log.exception("unhandled error on %s %s", scope.get("method"), path)  # rid: the filter's
                error = SwitchboardError()
            await _send_error(emit, path, error)
        finally:
            access.request_ended(scope, telemetry, context_token, status, started)


async def _send_error(send: Send, path: str, error: SwitchboardError) -> None:
    body = orjson.dumps(error_body(error, surface_for(path)))
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *((k.lower().encode(), v.encode()) for k, v in error.headers.items()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
