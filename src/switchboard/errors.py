"""The typed exceptions every layer raises; `error_shapes` renders them on the wire."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, ClassVar


class SwitchboardError(Exception):
    """Base of every error that reaches a client.

    `code` is the seed's structured enum (flat and nested shapes); `openai_type` and
    `openai_code` are what the `/v1` surface sends so that client SDKs raise the right class.
    """

    status: ClassVar[int] = 500
    code: ClassVar[str] = "INTERNAL_ERROR"
    openai_type: ClassVar[str] = "api_error"
    default_message: ClassVar[str] = "internal error"

    def __init__(
        self,
        message: str | None = None,
        *,
        details: str | Mapping[str, Any] | list[Any] | None = None,
        param: str | None = None,
        openai_code: str | None = None,
        headers: Mapping[str, str] | None = None,
        code: str | None = None,
    ) -> None:
        self.message = message or self.default_message
        super().__init__(self.message)
        self.details = details
        self.param = param
        self.openai_code = openai_code
        self.headers = dict(headers or {})
        if code is not None:
            self.code = code  # type: ignore[misc]
        self.openai_extra: dict[str, Any] = {}
        # A byte relay's stream: the provider's own error event, exactly as it came. The stream
        # that relays the provider's format sends it, as its last event, once the call is settled.
        self.provider_event = b""


class BadRequest(SwitchboardError):
    status = 400
    code = "BAD_REQUEST"
    openai_type = "invalid_request_error"
    default_message = "bad request"


class ValidationFailed(BadRequest):
    code = "VALIDATION_FAILED"
    default_message = "validation failed"


class IdempotencyConflict(BadRequest):
    code = "IDEMPOTENCY_CONFLICT"
    default_message = "Idempotency-Key was already used with a different request body"


class Unauthorized(SwitchboardError):
    status = 401
    code = "UNAUTHORIZED"
    openai_type = "authentication_error"
    default_message = "missing or invalid bearer token"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.headers.setdefault("WWW-Authenticate", 'Bearer realm="switchboard"')
        if self.openai_code is None:
            self.openai_code = "invalid_api_key"


class Forbidden(SwitchboardError):
    status = 403
    code = "FORBIDDEN"
    openai_type = "permission_error"
    default_message = "not allowed"


class NotFound(SwitchboardError):
    status = 404
    code = "NOT_FOUND"
    openai_type = "invalid_request_error"
    default_message = "not found"


class MethodNotAllowed(SwitchboardError):
    status = 405
    code = "BAD_REQUEST"
    openai_type = "invalid_request_error"
    default_message = "method not allowed"


class Conflict(SwitchboardError):
    status = 409
    code = "CONFLICT"
    openai_type = "invalid_request_error"
    default_message = "conflicting state"


class HeadTooLarge(SwitchboardError):
    """A request head over the server's limits (size, one line, or the number of lines)."""

    status = 431
    code = "REQUEST_HEADER_FIELDS_TOO_LARGE"
    openai_type = "invalid_request_error"
    default_message = "request head too large"


class RequestTimeout(SwitchboardError):
    """A request body that stalled, or took longer than the server allows (server_protocol.py)."""

    status = 408
    code = "BAD_REQUEST"
    openai_type = "invalid_request_error"
    default_message = "the request body did not arrive in time"


class PayloadTooLarge(SwitchboardError):
    status = 413
    code = "BAD_REQUEST"
    openai_type = "invalid_request_error"
    default_message = "request body too large"


class Unprocessable(SwitchboardError):
    """Well-formed input that does not resolve (SPEC §3: 422)."""

    status = 422
    code = "VALIDATION_FAILED"
    openai_type = "invalid_request_error"
    default_message = "input does not resolve"


class UpstreamCredentialRejected(SwitchboardError):
    """A provider refused a stored key: 424, so clients neither refresh nor retry."""

    status = 424
    code = "LLM_FAILED"
    openai_type = "invalid_request_error"
    default_message = "the provider rejected the stored credential"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("openai_code", "upstream_credential_rejected")
        super().__init__(message, **kwargs)


class RateLimited(SwitchboardError):
    status = 429
    code = "RATE_LIMITED"
    openai_type = "rate_limit_error"
    default_message = "rate limited"


class LimitRefused(SwitchboardError):
    """A call a limit does not let through (SPEC §13); `limit_id`/`resets_at` ride in the error object."""

    def __init__(self, message: str, *, extra: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.openai_extra = dict(extra)


class LimitRateExceeded(LimitRefused):
    status = 429
    code = "RATE_LIMITED"
    openai_type = "rate_limit_error"

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("openai_code", "rate_limit_exceeded")
        super().__init__(message, **kwargs)


class BudgetExceeded(LimitRefused):
    """402, so that SDKs do not retry: waiting does not help before the window resets."""

    status = 402
    code = "BUDGET_EXCEEDED"
    openai_type = "insufficient_quota"

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("openai_code", "budget_exceeded")
        super().__init__(message, **kwargs)


class ServiceUnavailable(SwitchboardError):
    status = 503
    code = "INTERNAL_ERROR"
    default_message = "service unavailable"


class UpstreamFailed(SwitchboardError):
    status = 502
    code = "LLM_FAILED"
    default_message = "the provider failed"


class UpstreamTimeout(UpstreamFailed):
    status = 504
    default_message = "the provider timed out"


class UpstreamUnanswered(UpstreamTimeout):
    """The first-byte timeout passed after the request was written (SPEC §21): the provider may be
    running it, so, as for a drop, the call ends with this 504; no route is tried again."""

    default_message = "the provider did not answer in time after the request was sent; it was not retried"


class UpstreamConnectionFailed(UpstreamFailed):
    """No HTTP answer: the connection could not be opened, or broke before the answer was complete.

    Its own class because routing retries it on the same credential (SPEC §14), unlike a 5xx."""

    default_message = "the provider connection failed"


class UpstreamForbidden(UpstreamFailed):
    """The egress guard refused the provider's address (SPEC §21): nothing was sent."""

    default_message = "the provider's address is forbidden"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("openai_code", "upstream_forbidden")
        super().__init__(message, **kwargs)


class UpstreamDropped(UpstreamFailed):
    """The connection broke after the request was written and before any answer (SPEC §21): the
    provider may have run it, so the call ends here; no route is tried again."""

    default_message = "the provider connection dropped after the request was sent; it was not retried"

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("openai_code", "upstream_dropped")
        super().__init__(message, **kwargs)


class UpstreamBadRequest(BadRequest):
    """A provider's 400, passed on after scrubbing."""

    code = "LLM_FAILED"


# A failure the gateway has no code for (a bug, a library's exception): the record and the metric
# label say this, never the exception's class name, which is no contract and changes with the code.
INTERNAL_ERROR = "internal_error"


def error_code_of(error: BaseException) -> str:
    """The stable code a failed attempt's record and metrics carry: the gateway's own error code."""
    if isinstance(error, SwitchboardError):
        return str(error.openai_code or error.code)
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    return INTERNAL_ERROR
