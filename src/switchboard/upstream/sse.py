"""Cuts an OpenAI-format SSE byte stream into whole events, reading each only as far as usage needs."""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

from switchboard.upstream.types import Usage

_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_NULL_USAGE = (b'"usage":null', b'"usage": null')


@dataclass(frozen=True)
class Event:
    data: bytes  # the event exactly as the provider sent it, terminator included
    done: bool = False  # `data: [DONE]`
    usage: Usage | None = None
    is_usage_only: bool = False


class EventSplitter:
    """Feed it byte chunks as they arrive; it returns the whole events completed so far."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[Event]:
        buffer = self._buffer + chunk if self._buffer else chunk
        events: list[Event] = []
        start = 0
        while (found := _BOUNDARY.search(buffer, start)) is not None:
            event = classify(buffer[start : found.end()])
            if event is not None:
                events.append(event)
            start = found.end()
        self._buffer = buffer[start:]
        return events

    def flush(self) -> list[Event]:
        """What is left at the end of the body (a last event without its blank line)."""
        rest, self._buffer = self._buffer, b""
        event = classify(rest + b"\n\n") if rest.strip() else None
        return [event] if event is not None else []


def classify(raw: bytes) -> Event | None:
    """None for comments and blank keep-alives; otherwise the event, with usage when it carries it."""
    body = raw.strip()
    if not body or (body[:1] == b":" and all(line.startswith(b":") for line in body.splitlines())):
        return None
    if body in (b"data: [DONE]", b"data:[DONE]"):
        return Event(raw, done=True)
    # Most chunks carry no usage (or `"usage":null` when include_usage is on): skip the parse.
    if b'"usage"' not in body or any(marker in body for marker in _NULL_USAGE):
        return Event(raw)
    payload = _payload(body)
    if not isinstance(payload, dict) or not isinstance(payload.get("usage"), dict):
        return Event(raw)
    return Event(raw, usage=Usage.from_openai(payload["usage"]), is_usage_only=payload.get("choices") == [])


def _payload(body: bytes) -> object:
    data = b"\n".join(line[5:].lstrip(b" ") for line in body.splitlines() if line.startswith(b"data:"))
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
