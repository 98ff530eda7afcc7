"""Cuts an OpenAI-format SSE byte stream into whole events, reading each only as far as usage needs."""

from __future__ import annotations

import re

import orjson

from switchboard.errors import SwitchboardError
from switchboard.upstream import provider_errors
from switchboard.upstream.types import StreamEvent, Usage
from switchboard.upstream.usage_openai import openai_usage

_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_NULL_USAGE = (b'"usage":null', b'"usage": null')
_NULL_USAGE_LAST = b'"usage":null}\n\n'
# Where a chunk's last choice's last value ends, when `choices` is its last key or is followed only by
# `"usage":null`: a string there (`"stop"`, `"error"`) marks a finish chunk.
_LAST_CHOICE_VALUE = -len(b"}]}\n\n") - 1
_LAST_CHOICE_VALUE_NULL_USAGE = -len(b'}],"usage":null}\n\n') - 1
_DONE = (b"data: [DONE]", b"data:[DONE]")
_new_event = tuple.__new__  # StreamEvent(raw) without the Python-level __new__ a NamedTuple adds


class EventSplitter:
    """Feed it byte chunks as they arrive; it returns the whole events completed so far, each exactly
    as the provider sent it. `[DONE]`, comments and blank keep-alives are not returned; `done` and
    `usage` record what they and the usage chunk said. A chunk with a top-level `error` (as OpenAI,
    OpenRouter and compatible servers report a failure inside a 200 stream) ends the stream and is
    not returned: it becomes `failure`, with the chunk's bytes as its `provider_event`, which the
    pipeline sends as the stream's last event once the call is settled (llm/relay.py), or, when no
    event came before it, never: the call then moves on to its next route (SPEC §14)."""

    __slots__ = ("_buffer", "done", "failure", "malformed", "usage")

    def __init__(self) -> None:
        self._buffer = b""
        self.done = False  # `data: [DONE]` seen, or the provider's error chunk
        self.usage: Usage | None = None
        self.failure: SwitchboardError | None = None
        self.malformed = False  # an event whose data is not JSON was relayed

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        if self.done:  # nothing after the provider's first [DONE] reaches the client
            return []
        buffer = self._buffer + chunk if self._buffer else chunk
        if b"\r" in buffer:  # JSON escapes control characters, so a CR can only be a line ending
            return self._feed_any_line_ending(buffer)
        *parts, self._buffer = buffer.split(b"\n\n")
        events: list[StreamEvent] = []
        for part in parts:
            raw = part + b"\n\n"
            # Almost every event is one `data: {…}` chunk without usage, or with OpenAI's
            # `"usage":null` as its last key: relayed without a look inside, and built as a bare
            # tuple (the cheapest object there is). An error chunk is OpenAI's `data: {"error"…`,
            # whose first key starts with an `e` (byte 101 at index 8), or OpenRouter's ordinary
            # chunk with a top-level `error` and `"finish_reason":"error"` as its last choice's last
            # field: one whose choices end on a string (byte 34 before `}]}` or `}],"usage":null}`,
            # a finish chunk, once a choice) is looked at in _classify too.
            if (
                raw[:7] == b"data: {"
                and raw[8] != 101
                and raw[-3] == 125  # ends as an object does: `}`; else it is looked at in _classify
                and (
                    (raw.endswith(_NULL_USAGE_LAST) and raw[_LAST_CHOICE_VALUE_NULL_USAGE] != 34)
                    or (raw[_LAST_CHOICE_VALUE] != 34 and b'"usage"' not in raw)
                )
            ):
                events.append(_new_event(StreamEvent, (raw, False)))
            else:
                self._classify(raw, events)
                if self.done:
                    self._buffer = b""
                    break
        return events

    def _feed_any_line_ending(self, buffer: bytes) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        start = 0
        while (found := _BOUNDARY.search(buffer, start)) is not None:
            self._classify(buffer[start : found.end()], events)
            start = found.end()
            if self.done:
                start = len(buffer)
                break
        self._buffer = buffer[start:]
        return events

    def flush(self) -> list[StreamEvent]:
        """What is left at the end of the body (a last event without its blank line)."""
        rest, self._buffer = self._buffer, b""
        events: list[StreamEvent] = []
        if rest.strip() and not self.done:
            self._classify(rest + b"\n\n", events)
        return events

    def _classify(self, raw: bytes, events: list[StreamEvent]) -> None:
        """Drops comments and blank keep-alives, notes `[DONE]`, reads usage where an event carries it."""
        body = raw.strip()
        if not body or (body[:1] == b":" and all(line.startswith(b":") for line in body.splitlines())):
            return
        if body in _DONE:
            self.done = True
            return
        # `"error"` can be in the bytes only as a key or a whole string value (JSON escapes the
        # quotes of text); the payload's top-level `error` decides, as the openai SDK's does.
        if b'"error"' in body:
            payload = _payload(body)
            if isinstance(payload, dict) and payload.get("error"):
                if isinstance(payload.get("usage"), dict):  # what the provider counted before failing
                    self.usage = openai_usage(payload["usage"], payload.get("service_tier"))
                self.failure = provider_errors.in_stream(payload["error"])
                self.failure.provider_event = raw
                self.done = True  # nothing after it reaches the client
                return
        # Most chunks carry no usage (or `"usage":null` when include_usage is on): skip the parse,
        # unless the event does not even look like one JSON object.
        if b'"usage"' not in body or any(marker in body for marker in _NULL_USAGE):
            if not (body.startswith((b"data: {", b"data:{")) and body.endswith(b"}")):
                self.malformed = self.malformed or _payload(body) is None
            events.append(StreamEvent(raw))
            return
        payload = _payload(body)
        if not isinstance(payload, dict) or not isinstance(payload.get("usage"), dict):
            self.malformed = self.malformed or payload is None
            events.append(StreamEvent(raw))
            return
        self.usage = openai_usage(payload["usage"], payload.get("service_tier"))
        events.append(StreamEvent(raw, payload.get("choices") == []))


def _payload(body: bytes) -> object:
    data = b"\n".join(line[5:].lstrip(b" ") for line in body.splitlines() if line.startswith(b"data:"))
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
