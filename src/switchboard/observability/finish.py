"""An answer's finish reasons (`gen_ai.response.finish_reasons`), read only while tracing is on.

OpenAI-format answers (every chat provider's, as the upstream layer hands them on, and text
completions) say one `finish_reason` per choice; a stream says it in the chunk that ends each
choice. Nothing here runs unless events.py found tracing on, so a gateway that does not trace never
looks twice at an answer. The native relays (upstream/native.py) read their own formats' reasons
where they already parse the events that carry them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from switchboard.upstream.types import StreamEvent, UpstreamStream

# A choice's finish_reason that is a string, not null: the one chunk per choice worth a parse.
_SAID = re.compile(rb'"finish_reason"\s*:\s*"')


def of_choices(body: bytes) -> list[str]:
    """A non-streamed answer's reasons, in choice order ([] when it names none)."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    found: dict[int, str] = {}
    _take(payload, found)
    return _ordered(found)


def _take(payload: Any, found: dict[int, str]) -> None:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list):
        return
    for position, choice in enumerate(choices):
        if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str):
            index = choice.get("index")
            found[index if isinstance(index, int) else position] = choice["finish_reason"]


def _ordered(found: dict[int, str]) -> list[str]:
    return [found[index] for index in sorted(found)]


class ChoicesWatch(UpstreamStream):
    """An OpenAI-format stream passed on untouched; the chunks that end a choice are parsed and the
    reasons so far handed to `report` (tracing's), which keeps the last it was given."""

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
        if b'"finish_reason"' not in data or _SAID.search(data) is None:
            return
        lines = [line[5:] for line in data.splitlines() if line.startswith(b"data:")]
        try:
            payload = orjson.loads(b"\n".join(lines)) if lines else None
        except orjson.JSONDecodeError:
            return
        before = len(self._found)
        _take(payload, self._found)
        if len(self._found) != before:
            self._report(_ordered(self._found))
