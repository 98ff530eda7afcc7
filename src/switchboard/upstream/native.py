"""A client surface relayed to a provider that speaks it (SPEC §16): Anthropic Messages to an
`anthropic` credential, OpenAI Responses to an `openai` one. The body goes out with only `model`
changed, the answer comes back byte for byte; only the usage is read on the way (and, while tracing
is on, the finish reasons, from the same parsed events). A provider's error event (Anthropic's
`error`; OpenAI Responses' `error` or `response.failed`) ends the stream as the provider's failure,
which carries the event's bytes (`provider_event`): the surface sends them as they came once the call
is settled, or, when the error was the stream's first event, the call moves on to its next route.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from switchboard.errors import BadRequest, SwitchboardError, UpstreamFailed
from switchboard.observability import events as telemetry
from switchboard.observability import tracing
from switchboard.upstream import provider_errors, relay_exchange
from switchboard.upstream.adapters.anthropic_stream import ERROR_STATUS
from switchboard.upstream.adapters.anthropic_usage import usage as anthropic_reader
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.endpoint_cache import EndpointCache
from switchboard.upstream.endpoints import Endpoint
from switchboard.upstream.provider_stream import ProviderStream
from switchboard.upstream.types import StreamEvent, UpstreamReply, UpstreamStream, UpstreamTarget, Usage
from switchboard.upstream.usage_openai import openai_usage
from switchboard.wire import responses as responses_wire

_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def anthropic_answer_usage(answer: dict[str, Any]) -> Usage | None:
    """A Messages answer's usage, read by Anthropic's one reader with the answer's thinking text."""
    raw = answer.get("usage")
    if not isinstance(raw, dict):
        return None
    blocks = answer.get("content")
    thinking = [
        block["thinking"]
        for block in (blocks if isinstance(blocks, list) else ())
        if isinstance(block, dict)
        and block.get("type") == "thinking"
        and isinstance(block.get("thinking"), str)
    ]
    return anthropic_reader(raw, "".join(thinking) or None)


def responses_answer_usage(answer: dict[str, Any]) -> Usage | None:
    raw = answer.get("usage")
    return openai_usage(raw, answer.get("service_tier")) if isinstance(raw, dict) else None


def _answer(data: bytes) -> dict[str, Any]:
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise UpstreamFailed("the provider answered 200 with a body that is not JSON") from None
    if not isinstance(payload, dict):
        raise UpstreamFailed("the provider answered 200 with a body that is not a JSON object")
    if payload.get("type") == "error" or isinstance(payload.get("error"), dict):
        raise UpstreamFailed("the provider answered 200 with an error in the body")
    return payload


def _anthropic_reasons(message: dict[str, Any]) -> list[str]:
    reason = message.get("stop_reason")
    return [reason] if isinstance(reason, str) else []


def _responses_reasons(response: dict[str, Any]) -> list[str]:
    """A response names no finish reason: why it is incomplete, else its status (`completed`, …)."""
    details = response.get("incomplete_details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return [details["reason"]]
    status = response.get("status")
    return [status] if isinstance(status, str) else []


class _RelayedEvents:
    """The provider's events as they came (each with its blank line), the usage read on the way, up to
    the provider's error event, which is not returned: it is the failure's `provider_event`."""

    __slots__ = ("_buffer", "_read", "done", "failure", "raw_usage", "thinking", "usage")

    def __init__(self, read: Callable[[_RelayedEvents, dict[str, Any]], None]) -> None:
        self._buffer = b""
        self._read = read
        self.done = False
        self.usage: Usage | None = None
        # Anthropic: the usage merged over the stream's events and the thinking text, as the anthropic
        # adapter keeps them, so that both surfaces meter one answer alike.
        self.raw_usage: dict[str, Any] = {}
        self.thinking: list[str] = []
        # The provider's error event: raised once the events before it have gone out, so that the
        # call ends as failed; nothing after it is read.
        self.failure: SwitchboardError | None = None

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        if self.failure is not None:
            return []
        buffer = self._buffer + chunk if self._buffer else chunk
        events: list[StreamEvent] = []
        start = 0
        while (found := _BOUNDARY.search(buffer, start)) is not None:
            self._event(buffer[start : found.end()], events)
            start = found.end()
            if self.failure is not None:
                start = len(buffer)
                break
        self._buffer = buffer[start:]
        return events

    def flush(self) -> list[StreamEvent]:
        rest, self._buffer = self._buffer, b""
        events: list[StreamEvent] = []
        if rest.strip() and self.failure is None:
            self._event(rest + b"\n\n", events)
        return events

    def _event(self, raw: bytes, events: list[StreamEvent]) -> None:
        # Only the few events that carry usage or an error are parsed; text deltas pass untouched.
        if b"usage" in raw or b"error" in raw or b"thinking_delta" in raw:
            lines = [line[5:] for line in raw.splitlines() if line.startswith(b"data:")]
            try:
                payload = orjson.loads(b"\n".join(lines)) if lines else None
            except orjson.JSONDecodeError:
                payload = None
            if isinstance(payload, dict):
                self._read(self, payload)
            if self.failure is None and _named_error(raw):
                # The event's name decides, as Anthropic's and OpenAI's SDKs read it: an `error`
                # event whose data lacks its `type`, or is not JSON, is the provider's failure too.
                error = payload.get("error") if isinstance(payload, dict) else None
                self.failure = provider_errors.in_stream(error if isinstance(error, dict) else None)
            if self.failure is not None:
                self.failure.provider_event = raw
                return
        events.append(StreamEvent(raw))


def _named_error(raw: bytes) -> bool:
    return any(line[6:].strip() == b"error" for line in raw.splitlines() if line.startswith(b"event:"))


def _read_anthropic(events: _RelayedEvents, payload: dict[str, Any]) -> None:
    kind = payload.get("type")
    if kind == "content_block_delta":
        delta = payload.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "thinking_delta":
            thinking = delta.get("thinking")
            if isinstance(thinking, str) and thinking:
                events.thinking.append(thinking)
    elif kind == "message_start":
        usage = (payload.get("message") or {}).get("usage")
        if isinstance(usage, dict):
            events.raw_usage.update(usage)
            events.usage = anthropic_reader(events.raw_usage, None)  # known so far
    elif kind == "error":
        # Mapped as the anthropic adapter maps a mid-stream error (adapters/anthropic_stream.py).
        error = payload.get("error")
        status = ERROR_STATUS.get(str(error.get("type")), 500) if isinstance(error, dict) else 500
        events.failure = provider_errors.from_response(status, {}, orjson.dumps(payload), None)
    elif kind == "message_delta" and isinstance(payload.get("usage"), dict):
        if tracing.ON and isinstance(payload.get("delta"), dict):
            telemetry.answer_finished(_anthropic_reasons(payload["delta"]))
        # message_delta's usage is cumulative but may leave out what message_start said.
        events.raw_usage.update(payload["usage"])
        events.usage = anthropic_reader(events.raw_usage, "".join(events.thinking) or None)


def _read_responses(events: _RelayedEvents, payload: dict[str, Any]) -> None:
    kind = payload.get("type")
    if kind in responses_wire.ENDED:
        response = payload.get("response") or {}
        usage = response.get("usage")
        if isinstance(usage, dict):
            events.usage = openai_usage(usage, response.get("service_tier"))
        if tracing.ON and isinstance(response, dict):
            telemetry.answer_finished(_responses_reasons(response))
        if kind == responses_wire.FAILED:
            events.failure = provider_errors.in_stream(response.get("error"))
    elif kind == "error":
        # OpenAI's stream error event: {"type": "error", "code", "message", "param"}.
        error = {"code": payload.get("code"), "message": payload.get("message")}
        events.failure = provider_errors.in_stream(error)


class NativeFormat(NamedTuple):
    default_base_url: str
    path: str
    auth_header: str
    usage: Callable[[dict[str, Any]], Usage | None]  # of the whole answer, by the provider's one reader
    reasons: Callable[[dict[str, Any]], list[str]]  # of the whole answer
    read_event: Callable[[_RelayedEvents, dict[str, Any]], None]


ANTHROPIC_MESSAGES = NativeFormat(
    "https://api.anthropic.com",
    "/v1/messages",
    "x-api-key",
    anthropic_answer_usage,
    _anthropic_reasons,
    _read_anthropic,
)
# Free at Anthropic and answered {"input_tokens": N}: no usage to read, nothing is metered.
ANTHROPIC_COUNT_TOKENS = NativeFormat(
    "https://api.anthropic.com",
    "/v1/messages/count_tokens",
    "x-api-key",
    anthropic_answer_usage,
    _anthropic_reasons,
    _read_anthropic,
)
OPENAI_RESPONSES = NativeFormat(
    "https://api.openai.com/v1",
    "/responses",
    "authorization",
    responses_answer_usage,
    _responses_reasons,
    _read_responses,
)


def _encode(body: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        raise BadRequest("the request body cannot be encoded as JSON") from None


class NativeRelay:
    def __init__(self, connections: ProviderConnections) -> None:
        self.connections = connections
        self._endpoints = EndpointCache()

    def _endpoint(self, target: UpstreamTarget, wire: NativeFormat) -> Endpoint:
        return self._endpoints.get(target.base_url, wire.default_base_url, wire.path, wire.auth_header)

    async def json(
        self, target: UpstreamTarget, wire: NativeFormat, body: dict[str, Any], headers: bytes = b""
    ) -> UpstreamReply:
        """`headers`: the client's header lines the provider must see (anthropic-version, -beta)."""
        data = await relay_exchange.post_json(
            self.connections.pool(target.allow_private),
            self.connections.timeouts,
            target,
            self._endpoint(target, wire),
            _encode({**body, "model": target.model}),
            headers,
        )
        answer = _answer(data)
        if tracing.ON:
            telemetry.answer_finished(wire.reasons(answer))
        return UpstreamReply(body=data, usage=wire.usage(answer))

    def stream(
        self, target: UpstreamTarget, wire: NativeFormat, body: dict[str, Any], headers: bytes = b""
    ) -> UpstreamStream:
        content = _encode({**body, "model": target.model, "stream": True})
        endpoint = self._endpoint(target, wire)
        events = _RelayedEvents(wire.read_event)
        return ProviderStream(self.connections, target, endpoint, content, events, False, headers)
