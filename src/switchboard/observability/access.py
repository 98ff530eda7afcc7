"""The access record, one per request, and the request id on every log record of a request (SPEC §17).

request_context.py calls `request_started` when a request arrives and `request_ended` once its
response is out; the call's figures (model, provider, economy, tokens, cost, attempts) were left on
the request's RequestTelemetry by events.call_settled. Model-call requests are also counted here,
where their HTTP status is known (`switchboard_requests_total{endpoint,status}`).
"""

from __future__ import annotations

import logging
import time
from contextvars import Token
from typing import Any

from switchboard.observability import tracing
from switchboard.observability.request import CURRENT, RequestTelemetry
from switchboard.wire.paths import ENDPOINTS

log = logging.getLogger("switchboard.access")

_TEXT = "%s %s %s %sms rid=%s"
_TEXT_CALL = _TEXT + " model=%s/%s economy=%s tokens=%s/%s cost=%s attempts=%s ttfb=%sms"


def request_started(scope: Any, request_id: str) -> tuple[RequestTelemetry, Token[RequestTelemetry | None]]:
    request = RequestTelemetry(request_id)
    token = CURRENT.set(request)
    if tracing.ON:
        path = scope.get("path", "")
        method = scope.get("method", "")
        # Span names stay few: the model-call routes by path, every other request by method.
        tracing.start_server(request, scope, f"{method} {path}" if path in ENDPOINTS else method)
    return request, token


def request_ended(
    scope: Any,
    request: RequestTelemetry,
    token: Token[RequestTelemetry | None],
    status: int,
    started: float,
) -> None:
    path = scope.get("path")
    endpoint = ENDPOINTS.get(path) if scope.get("method") == "POST" else None
    if endpoint is not None:
        metrics = getattr(getattr(scope.get("app"), "state", None), "metrics", None)
        if metrics is not None:
            metrics.request(endpoint, status)
    if log.isEnabledFor(logging.INFO):
        _log_record(scope, request, status, started)
    if request.span is not None:
        tracing.end_server(request, status)
    CURRENT.reset(token)


def _ms(since: float, until: float | None) -> float | None:
    return round((until - since) * 1000, 2) if until is not None else None


def _log_record(scope: Any, request: RequestTelemetry, status: int, started: float) -> None:
    # Never the query string, headers or body: they can carry tokens and secrets.
    method, path = scope.get("method"), scope.get("path")
    latency_ms = _ms(started, time.perf_counter())
    ttfb_ms = _ms(started, request.first_byte)
    fields = {
        "request_id": request.request_id,
        "method": method,
        "path": path,
        "status": status,
        "latency_ms": latency_ms,
        "ttfb_ms": ttfb_ms,
        "model": request.model,
        "provider": request.provider,
        "economy_id": request.economy_id,
        "prompt_tokens": request.prompt_tokens,
        "completion_tokens": request.completion_tokens,
        "cost": request.cost,
        "attempts": request.attempts,
    }
    args: tuple[object, ...] = (method, path, status, latency_ms, request.request_id)
    text = _TEXT
    if request.model is not None:
        text = _TEXT_CALL
        args = (
            *args,
            request.provider,
            request.model,
            request.economy_id,
            request.prompt_tokens,
            request.completion_tokens,
            request.cost,
            request.attempts,
            ttfb_ms,
        )
    # makeRecord + handle is log.info without the stack walk that finds the caller's file and line,
    # which no format here shows; this runs once per request.
    record = log.makeRecord(log.name, logging.INFO, __file__, 0, text, args, None, extra={"fields": fields})
    log.handle(record)
