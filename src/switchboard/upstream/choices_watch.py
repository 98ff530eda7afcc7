"""An OpenAI-format stream watched for its finish reasons, only while tracing is on.

The stream passes on untouched; the chunks that end a choice are parsed (observability/finish.py
reads them) and the reasons so far handed to tracing, which keeps the last it was given.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from switchboard.observability import events, finish, tracing
from switchboard.upstream.types import StreamEvent, UpstreamStream


def watched(stream: UpstreamStream) -> UpstreamStream:
    """`stream` watched when tracing is on (else as it is)."""
    if not tracing.ON:
        return stream
    report = events.finish_reporter()
    return stream if report is None else ChoicesWatch(stream, report)


class ChoicesWatch(UpstreamStream):
    def __init__(self, inner: UpstreamStream, report: Callable[[list[str]], None]) -> None:
        self.client_wants_usage = inner.client_wants_usage
        self.usage = inner.usage
        self._inner = inner
        self._report = report
        self._found: dict[int, str] = {}

    async def __anext__(self) -> StreamEvent:
        try:
            event = await anext(self._inner)
        finally:
            self.usage = self._inner.usage
        self._look(event.data)
        return event

    def ready(self) -> list[StreamEvent]:
        events = self._inner.ready()
        for event in events:
            self._look(event.data)
        self.usage = self._inner.usage
        return events

    async def aclose(self) -> None:
        await self._inner.aclose()
        self.usage = self._inner.usage
        self.malformed = self._inner.malformed

    def _look(self, data: bytes) -> None:
        if b'"finish_reason"' not in data or finish.SAID.search(data) is None:
            return
        lines = [line[5:] for line in data.splitlines() if line.startswith(b"data:")]
        try:
            payload = orjson.loads(b"\n".join(lines)) if lines else None
        except orjson.JSONDecodeError:
            return
        before = len(self._found)
        finish.take(payload, self._found)
        if len(self._found) != before:
            self._report(finish.ordered(self._found))
