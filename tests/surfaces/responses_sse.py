"""Reading Responses API SSE bytes back in tests, and the grammar every stream must follow."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

_EVENT = TypeAdapter(ResponseStreamEvent)


def parse(data: bytes) -> list[dict[str, Any]]:
    """Each event's data, after checking that its `event:` line names its `type`."""
    events: list[dict[str, Any]] = []
    for block in data.split(b"\n\n"):
        if not block.strip():
            continue
        lines = block.split(b"\n")
        names = [line[len(b"event: ") :].decode() for line in lines if line.startswith(b"event: ")]
        payload = orjson.loads(
            b"".join(line[len(b"data: ") :] for line in lines if line.startswith(b"data: "))
        )
        assert names == [payload["type"]], block
        events.append(payload)
    return events


def check_grammar(events: list[dict[str, Any]], *, relayed: bool = False) -> None:
    """SPEC §16: starts with response.created, ends with response.completed (or .incomplete/.failed),
    strictly increasing integer sequence numbers, and every event is one the openai SDK knows,
    validated strictly by its own models. `relayed`: the fake provider's own events, whose usage
    lacks `cache_write_tokens`, are checked without it."""
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] in ("response.completed", "response.incomplete", "response.failed")
    numbers = [event["sequence_number"] for event in events]
    assert all(isinstance(n, int) for n in numbers)
    assert all(b > a for a, b in itertools.pairwise(numbers)), numbers
    for event in events:
        if relayed and "response" in event:
            event = {**event, "response": {**event["response"], "usage": None}}
        _EVENT.validate_python(event)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]
