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
                log.exception("unhandled error on %s %s rid=%s", scope.get("method"), path, request_id)
                error = SwitchboardError()
            await _send_error(emit, path, error)
        finally:
            _log_line(scope, status, started, request_id)


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


def _log_line(scope: Scope, status: int, started: float, request_id: str) -> None:
    if not log.isEnabledFor(logging.INFO):
        return
    # Never the query string, headers or body: they can carry tokens and secrets.
    method, path = scope.get("method"), scope.get("path")
    duration_ms = round((time.perf_counter() - started) * 1000, 2)
    fields = {
        "request_id": request_id,
        "method": method,
        "path": path,
        "status": status,
        "duration_ms": duration_ms,
    }
    # makeRecord + handle is log.info without the stack walk that finds the caller's file and line,
    # which no format here shows; this runs once per request.
    record = log.makeRecord(
        log.name,
        logging.INFO,
        __file__,
        0,
        "%s %s %s %sms rid=%s",
        (method, path, status, duration_ms, request_id),
        None,
        extra={"fields": fields},
    )
    log.handle(record)
