"""What one HTTP request carries for its telemetry: its id, its server span, and its call's figures.

Set in a context variable by the request middleware (request_context.py), so that the pipeline's
events (events.py) can leave the call's model, tokens and cost for the access record without being
handed the ASGI scope, and so that every log record written during the request carries its id.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any


class RequestTelemetry:
    """Mutable on purpose: a stream settles in the response's task, after the middleware set it."""

    __slots__ = (
        "attempt_span",
        "attempts",
        "completion_tokens",
        "cost",
        "economy_id",
        "first_byte",
        "model",
        "prompt_tokens",
        "provider",
        "request_id",
        "span",
    )

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.first_byte: float | None = None  # perf_counter when the response head went out
        # The model call's, once it settled (None for a request that made none).
        self.model: str | None = None
        self.provider: str | None = None
        self.economy_id: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cost: str | None = None  # nano-units, as amounts are written (SPEC §4)
        self.attempts: int | None = None
        # Tracing only: the request's SERVER span and the CLIENT span of the attempt under way.
        self.span: Any = None
        self.attempt_span: Any = None


CURRENT: ContextVar[RequestTelemetry | None] = ContextVar("switchboard_request", default=None)


class RequestIdFilter(logging.Filter):
    """Gives every record written during a request that request's id (`record.request_id`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = CURRENT.get()
        record.request_id = request.request_id if request is not None else None
        return True
