"""Renders every error into the one wire shape its surface documents (SPEC §3)."""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from switchboard.db.outage import lost_database
from switchboard.errors import (
    BadRequest,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    SwitchboardError,
    ValidationFailed,
)
from switchboard.wire.paths import on_anthropic_surface, on_v1

log = logging.getLogger("switchboard.errors")


class Surface(Enum):
    OPENAI = "openai"
    ANTHROPIC = "anthropic"  # /v1/messages (SPEC §16)
    REGISTRY = "registry"
    FLAT = "flat"


def surface_for(path: str) -> Surface:
    if on_anthropic_surface(path):
        return Surface.ANTHROPIC
    if on_v1(path):
        return Surface.OPENAI
    if path == "/agents" or path.startswith("/agents/"):
        return Surface.REGISTRY
    return Surface.FLAT


# Anthropic's error type for each status its API uses; anything else is a 4xx or 5xx of its own.
ANTHROPIC_TYPES = {
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def anthropic_type(status: int) -> str:
    return ANTHROPIC_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def error_body(error: SwitchboardError, surface: Surface) -> dict[str, Any]:
    if surface is Surface.ANTHROPIC:
        # Anthropic's SDKs pick the exception class by status and show `message`; nothing else is read.
        return {"type": "error", "error": {"type": anthropic_type(error.status), "message": error.message}}
    if surface is Surface.OPENAI:
        return {
            "error": {
                "message": error.message,
                "type": error.openai_type,
                "param": error.param,
                "code": error.openai_code or error.code.lower(),
                **error.openai_extra,
            }
        }
    if surface is Surface.REGISTRY:
        # The seed types `details` as string | object | null, so a list of problems goes in an object.
        details = {"problems": error.details} if isinstance(error.details, list) else error.details
        return {"error": {"code": error.code, "message": error.message, "details": details}}
    body: dict[str, Any] = {"error": error.message, "code": error.code}
    if error.details is not None:
        body["details"] = error.details
    return body


def error_response(error: SwitchboardError, path: str) -> Response:
    body = error_body(error, surface_for(path))
    return Response(
        content=orjson.dumps(body),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


def _describe_validation(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]], str | None]:
    problems: list[dict[str, Any]] = []
    for item in exc.errors():
        loc = [str(part) for part in item.get("loc", ()) if part != "body"]
        # Never echo the rejected input back: it may be a secret.
        problems.append({"field": ".".join(loc) or "body", "problem": item.get("msg", "invalid")})
    if not problems:
        return "invalid request", problems, None
    first = problems[0]
    if any(item.get("type") == "json_invalid" for item in exc.errors()):
        return "malformed JSON body", problems, None
    return f"{first['field']}: {first['problem']}", problems, first["field"]


def switchboard_error_response(error: SwitchboardError, path: str) -> Response:
    """A raised SwitchboardError as its response; the framework's handler and llm/fast_routes.py share it."""
    if error.status >= 500:
        log.warning("request failed: %s %s", error.code, type(error).__name__)
    return error_response(error, path)


async def _on_switchboard_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SwitchboardError)
    return switchboard_error_response(exc, request.url.path)


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    message, problems, param = _describe_validation(exc)
    malformed = any(item.get("type") == "json_invalid" for item in exc.errors())
    error_class = BadRequest if malformed else ValidationFailed
    return error_response(error_class(message, details=problems, param=param), request.url.path)


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    error: SwitchboardError
    if exc.status_code == 404:
        error = NotFound("no such route" if exc.detail == "Not Found" else str(exc.detail))
    elif exc.status_code == 405:
        error = MethodNotAllowed()
    elif exc.status_code == 413:
        error = PayloadTooLarge()
    else:
        error = BadRequest(str(exc.detail))
        error.status = exc.status_code  # type: ignore[misc]
    response = error_response(error, request.url.path)
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    if exc.status_code == 405:
        response.headers["allow"] = ", ".join(allowed_methods(request))
    return response


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path: each FastAPI route holds one method, and the
    framework's 405 names only the first route that matched the path."""
    methods: set[str] = set()
    for route in getattr(request.app.state, "routes_by_path", ()):
        if route.path_regex.match(request.url.path):
            methods.update(route.methods or ())
    return sorted(methods)


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    lost = lost_database(request.scope, exc)
    if lost is not None:
        return error_response(lost, request.url.path)
    # The stack trace goes to the log under the request id, never to the client.
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(SwitchboardError(), request.url.path)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(SwitchboardError, _on_switchboard_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(Exception, _on_unexpected)
