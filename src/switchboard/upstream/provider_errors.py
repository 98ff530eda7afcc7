"""Every provider failure becomes one of errors.py's classes here, with secrets scrubbed (SPEC §3, §5)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import orjson

from switchboard.errors import (
    BadRequest,
    NotFound,
    RateLimited,
    SwitchboardError,
    Unprocessable,
    UpstreamBadRequest,
    UpstreamConnectionFailed,
    UpstreamCredentialRejected,
    UpstreamDropped,
    UpstreamFailed,
    UpstreamForbidden,
    UpstreamTimeout,
)
from switchboard.kit.secret import Secret
from switchboard.upstream import providers
from switchboard.upstream.connection_pool import ConnectFailed
from switchboard.upstream.egress import RequestDropped
from switchboard.upstream.guard import forbidden_cause
from switchboard.upstream.resolver import ForbiddenHost

MAX_MESSAGE = 1000
_E = TypeVar("_E", bound=BaseException)
_DECODER = json.JSONDecoder()
REDACTED = "[redacted]"
# Shapes of keys and credentials that may appear in a provider's text, whoever's they are.
_KEY_SHAPES = [
    re.compile(r"(?i)\b(?:sk|pk|rk)-[A-Za-z0-9_\-*.]{6,}"),  # OpenAI / Anthropic, masked ones too
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),  # Google API keys
    re.compile(r"(?i)\bbearer\s+[^\s\"',]+"),
    re.compile(
        r"(?i)\b((?:x-goog-)?(?:x-)?api[_-]?key|key|token|secret|password)([\"']?\s*[:=]\s*[\"']?)"
        r"[^\s\"'&,}]+"
    ),
    # Long opaque tokens mixing letters and digits.
    re.compile(r"\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{32,}\b"),
]
# The provider's own words for "this key is not valid", whatever the status code.
_INVALID_KEY_MARKERS = ("API_KEY_INVALID", "authentication_error", "invalid_api_key", "invalid x-api-key")


def scrub(text: str, secret: Secret | None = None) -> str:
    """The text without the key that was sent, nor anything else shaped like a key."""
    if secret is not None:
        value = secret.reveal()
        # A JSON secret (azure, bedrock) is sent field by field: each field is scrubbed too.
        for part in (value, *providers.secret_values(value)):
            for form in {part, quote(part, safe="")} if part else ():
                text = text.replace(form, REDACTED)
    for shape in _KEY_SHAPES:
        text = shape.sub(lambda m: (m.group(1) + m.group(2) + REDACTED) if m.lastindex else REDACTED, text)
    return text[:MAX_MESSAGE]


def provider_message(body: bytes | str) -> str:
    """The human part of a provider error body: OpenAI, Anthropic and Gemini all say error.message."""
    raw = body.encode() if isinstance(body, str) else body
    try:
        payload: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw[:MAX_MESSAGE].decode("utf-8", "replace").strip()
    if isinstance(payload, list) and payload:
        payload = payload[0]  # Gemini's streaming endpoint wraps errors in a list
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error
        if isinstance(error, str):
            return error
    return raw[:MAX_MESSAGE].decode("utf-8", "replace")


def _retry_after(headers: Mapping[str, str]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in headers.items()}
    if value := lowered.get("retry-after"):
        return {"Retry-After": value.strip()}
    if milliseconds := lowered.get("retry-after-ms"):
        try:
            return {"Retry-After": str(max(1, math.ceil(float(milliseconds) / 1000)))}
        except ValueError:
            return {}
    return {}


def from_response(
    status: int, headers: Mapping[str, str], body: bytes | str, secret: Secret | None
) -> SwitchboardError:
    """A provider's error answer (status >= 400) as the gateway's error."""
    text = body if isinstance(body, str) else body.decode("utf-8", "replace")
    message = scrub(provider_message(body), secret)
    if status in (401, 403) or any(marker in text for marker in _INVALID_KEY_MARKERS):
        return UpstreamCredentialRejected(f"the provider rejected the stored credential: {message}")
    if status == 429:
        return RateLimited(f"the provider rate-limited the call: {message}", headers=_retry_after(headers))
    if status == 404:
        return NotFound(
            f"the provider does not know this model or path: {message}", openai_code="model_not_found"
        )
    if status == 408:
        return UpstreamTimeout(f"the provider timed out: {message}")
    if status >= 500:
        return UpstreamFailed(f"the provider failed ({status}): {message}")
    return UpstreamBadRequest(message or "the provider refused the request")


# OpenAI's error `code`s and `type`s as the HTTP status the same error has outside a stream (an error
# sent inside a 200 stream names no status). Anything else is the provider failing: 500.
_OPENAI_STATUS = {
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "invalid_request_error": 400,
    "invalid_prompt": 400,
    "context_length_exceeded": 400,
}


def in_stream(error: Any) -> SwitchboardError:
    """An OpenAI-format error sent inside a 200 stream: a chat chunk's `error` object (or bare
    message), a Responses `error` event's or failed response's. An integer `code` is its status (as
    vLLM sends it, and as litellm reads it), else its `code` or `type` names one."""
    status = 500
    if isinstance(error, dict):
        code = error.get("code")
        if isinstance(code, int) and 400 <= code <= 599:
            status = code
        else:
            status = _OPENAI_STATUS.get(str(code), _OPENAI_STATUS.get(str(error.get("type")), 500))
    elif not isinstance(error, str) or not error:
        error = "the provider's stream reported a failure"
    return from_response(status, {}, orjson.dumps({"error": error}), None)


def unusable_base_url() -> Unprocessable:
    return Unprocessable("the credential's base_url is not a URL the gateway can call", param="base_url")


def from_transport(error: BaseException) -> SwitchboardError:
    """A failure below HTTP (httpx's or the relay's own): refused address, timeout, reset."""
    forbidden = forbidden_cause(error) or _cause(error, ForbiddenHost)
    if forbidden is not None:  # SPEC §21: nothing was sent
        return UpstreamForbidden(f"the provider's address is forbidden ({forbidden.reason})")
    if _cause(error, RequestDropped) is not None:  # SPEC §21: sent, unanswered, never sent again
        return UpstreamDropped()
    if isinstance(error, httpx.TimeoutException | TimeoutError) or _caused_by(error, httpx.TimeoutException):
        return UpstreamTimeout()
    if isinstance(error, httpx.ConnectError | ConnectFailed) or _caused_by(error, httpx.ConnectError):
        return UpstreamConnectionFailed("could not connect to the provider")
    return UpstreamConnectionFailed("the provider connection failed")


def from_litellm(
    error: Exception,
    secret: Secret | None,
    depth: int = 0,
    *,
    provider: str = "",
    reached: bool | None = None,
) -> SwitchboardError:
    """litellm's exception (its text may hold request details, so only the provider's words are kept).

    `reached`: whether the call got an HTTP answer from the provider (None: unknown, for the kinds
    whose calls litellm makes on connections of its own). An error litellm raised before any answer
    is litellm's own refusal, reported in the gateway's words, never litellm's."""
    if _cause(error, RequestDropped) is not None:  # whatever status litellm gave it (SPEC §21)
        return UpstreamDropped()
    inner = getattr(error, "original_exception", None)
    if isinstance(inner, Exception) and inner is not error and depth < 5:
        # Stream failures arrive wrapped (MidStreamFallbackError); the provider's answer is inside.
        return from_litellm(inner, secret, depth + 1, provider=provider, reached=reached)
    if isinstance(error, httpx.HTTPStatusError):
        response = error.response
        try:
            body = response.content
        except httpx.ResponseNotRead:
            body = b""
        return from_response(response.status_code, response.headers, body, secret)
    kind = type(error).__name__
    if kind == "Timeout":
        return UpstreamTimeout()
    if isinstance(error, httpx.HTTPError | OSError | TimeoutError) or kind == "APIConnectionError":
        return from_transport(error)
    if forbidden_cause(error) is not None:
        return from_transport(error)
    status = getattr(error, "status_code", None)
    raw = str(getattr(error, "message", "") or "")
    answered = reached is True or (reached is None and _PROVIDER_SAID.search(raw) is not None)
    if kind == "UnsupportedParamsError" or not answered:
        return litellm_refusal(kind, raw, status, provider)
    if not isinstance(status, int):
        return UpstreamFailed("the provider call failed")
    text = _embedded_json(raw) or raw.split(" - ", 1)[-1]
    if kind == "AuthenticationError":
        status = 401
    return from_response(status, _litellm_headers(error), text, secret)


# litellm prefixes a provider's answer with the provider's name: `… OpenAIException - {body}`.
_PROVIDER_SAID = re.compile(r"[A-Za-z]Exception - ")
# UnsupportedParamsError's two wordings: `parameters: ['max_tokens']` and `parameter 'max_retries'`.
_UNSUPPORTED = re.compile(r"does not support parameters?:? \[?([^\]\n.]*)")
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def litellm_refusal(kind: str, text: str, status: object, provider: str) -> SwitchboardError:
    """A call litellm refused before sending it, in the gateway's words (SPEC §3: no internal text)."""
    who = provider or "this provider"
    if kind == "UnsupportedParamsError":
        found = _UNSUPPORTED.search(text)
        names = _PARAM_NAME.findall(found.group(1)) if found else []
        if names:
            return BadRequest(
                f"{who} does not accept the parameter(s) {', '.join(names)}; leave them out",
                param=names[0],
                openai_code="unsupported_parameter",
            )
        return BadRequest(
            f"{who} does not accept some of this request's parameters", openai_code="unsupported_parameter"
        )
    if "Unmapped LLM provider" in text or "LLM Provider NOT provided" in text:
        return BadRequest(
            f"the gateway cannot call {who} models", param="model", openai_code="unsupported_provider"
        )
    if isinstance(status, int) and 400 <= status < 500:
        return BadRequest(
            f"{who} cannot take this request: the gateway could not translate it to the provider's format",
            openai_code="untranslatable_request",
        )
    return UpstreamFailed(f"the call to {who} failed before it was sent")


def _embedded_json(text: str) -> str | None:
    """litellm writes `litellm.BadRequestError: AnthropicException - {provider body} <more text>`."""
    start = text.find("{")
    while start != -1:
        try:
            _, end = _DECODER.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return text[start:end]
    return None


def _litellm_headers(error: Exception) -> dict[str, str]:
    headers: dict[str, str] = {}
    response = getattr(error, "response", None)
    if isinstance(response, httpx.Response):
        headers.update(response.headers)
    for name in ("headers", "litellm_response_headers"):
        extra = getattr(error, name, None)
        if isinstance(extra, Mapping | httpx.Headers):
            headers.update({str(k): str(v) for k, v in extra.items()})
    return headers


def _cause(error: BaseException, kind: type[_E]) -> _E | None:
    """`error` itself or the first exception of `kind` in its chain."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _caused_by(error: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current = error.__cause__ or error.__context__
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
