"""Responses API streams for the pipeline: a chat stream translated (`ResponsesStream`), or the
provider's own Responses events relayed (`RelayedResponses`). Both hold their last event back as
`end` (the pipeline sends it once the call is settled; there is no `[DONE]`) and render a failure
after the first event as Responses events, numbered after the ones already sent.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from switchboard.errors import SwitchboardError
from switchboard.surfaces.responses_answer import ResponseFrame
from switchboard.surfaces.responses_events import ResponseEvents
from switchboard.surfaces.stream import SurfaceStream
from switchboard.upstream.types import StreamEvent, UpstreamStream
from switchboard.wire.responses import ANSWERED
from switchboard.wire.sse import frame_event

_SEQUENCE = re.compile(rb'"sequence_number"\s*:\s*(\d+)')
# How OpenAI opens the events that end a response (its `event:` line comes first). A failed one
# (`response.failed`, or an `error` event) is no event here: it is the failure's `provider_event`
# (upstream/native.py), which the pipeline sends once the call is settled.
_FINAL = tuple(b"event: " + name.encode() for name in ANSWERED)


def failure_of(error: BaseException) -> tuple[str, str]:
    """The code and message a stream's failure is reported with (never the provider's raw text
    unless the upstream layer already scrubbed it into a SwitchboardError)."""
    if isinstance(error, SwitchboardError):
        return error.openai_code or error.code.lower(), error.message
    return "upstream_error", "the provider stream failed"


def _chunk(data: bytes) -> dict[str, Any] | None:
    lines = [line[5:] for line in data.splitlines() if line.startswith(b"data:")]
    if not lines:
        return None
    try:
        payload = orjson.loads(b"\n".join(lines))
    except orjson.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


class ResponsesStream(SurfaceStream):
    """A chat stream's chunks as Responses events; usage, cancellation and errors pass through.

    The first event goes out only once the provider's first chunk arrived, so that a failure
    before it is still a plain error the pipeline may retry elsewhere.
    """

    def __init__(self, chat: UpstreamStream, request: dict[str, Any]) -> None:
        self._chat = chat
        self._events = ResponseEvents(ResponseFrame(request))

    def _translate(self, event: StreamEvent) -> StreamEvent:
        chunk = _chunk(event.data)
        return StreamEvent(self._events.feed(chunk) if chunk is not None else b"")

    async def __anext__(self) -> StreamEvent:
        try:
            event = await anext(self._chat)
        except StopAsyncIteration:
            if not self.end:
                self.end = self._events.finish(self._chat.usage)
            raise
        finally:
            self.usage = self._chat.usage
        return self._translate(event)

    def ready(self) -> list[StreamEvent]:
        events = [self._translate(event) for event in self._chat.ready()]
        self.usage = self._chat.usage
        return events

    def error_event(self, error: BaseException) -> bytes:
        return self._events.failure(*failure_of(error))

    async def aclose(self) -> None:
        await self._chat.aclose()


class RelayedResponses(SurfaceStream):
    """The provider's Responses events as they came, but its final one (`response.completed` or
    `.incomplete`) held back as `end`; the last `sequence_number` is noted, so that a failure the
    gateway reports follows on from it. The provider's own `response.failed` or `error` ends the
    stream as the failure that carries it: it goes out as it came."""

    def __init__(self, relayed: UpstreamStream) -> None:
        self._relayed = relayed
        self._last = -1

    def _note(self, event: StreamEvent) -> StreamEvent:
        data = event.data
        at = data.rfind(b'"sequence_number"')
        found = _SEQUENCE.match(data, at) if at >= 0 else None
        if found is not None:
            self._last = int(found.group(1))
        if data.startswith(_FINAL):
            self.end += data
            return StreamEvent(b"")
        return event

    async def __anext__(self) -> StreamEvent:
        try:
            return self._note(await anext(self._relayed))
        finally:
            self.usage = self._relayed.usage

    def ready(self) -> list[StreamEvent]:
        events = [self._note(event) for event in self._relayed.ready()]
        self.usage = self._relayed.usage
        return events

    def error_event(self, error: BaseException) -> bytes:
        if isinstance(error, SwitchboardError) and error.provider_event:
            return error.provider_event
        code, message = failure_of(error)
        payload: dict[str, Any] = {"type": "error", "code": code, "message": message, "param": None}
        payload["sequence_number"] = self._last + 1
        return frame_event("error", payload)

    async def aclose(self) -> None:
        await self._relayed.aclose()
