"""The SSE splitter hands back the provider's events byte for byte wherever reads cut them, with usage."""

from __future__ import annotations

import orjson
import pytest

from switchboard.upstream.sse import EventSplitter
from switchboard.upstream.types import StreamEvent, Usage

USAGE = {
    "prompt_tokens": 9,
    "completion_tokens": 4,
    "total_tokens": 13,
    "prompt_tokens_details": {"cached_tokens": 2},
    "completion_tokens_details": {"reasoning_tokens": 1},
}
EXPECTED_USAGE = Usage(prompt_tokens=9, completion_tokens=4, cached_tokens=2, reasoning_tokens=1)


def chunk(**fields: object) -> bytes:
    payload = {"id": "c1", "object": "chat.completion.chunk", "model": "m", **fields}
    return b"data: " + orjson.dumps(payload) + b"\n\n"


CONTENT = [
    chunk(choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}], usage=None),
    chunk(choices=[{"index": 0, "delta": {"content": 'say "usage": 5\n\n'}}], usage=None),
    chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=None),
]
USAGE_CHUNK = chunk(choices=[], usage=USAGE)
BODY = b": keep-alive\n\n" + b"".join(CONTENT) + USAGE_CHUNK + b"data: [DONE]\n\n"


def split_in_two(body: bytes, at: int) -> tuple[list[StreamEvent], EventSplitter]:
    splitter = EventSplitter()
    events = splitter.feed(body[:at]) + splitter.feed(body[at:]) + splitter.flush()
    return events, splitter


@pytest.mark.parametrize("line_ending", [b"\n", b"\r\n", b"\r"])
def test_events_come_out_unchanged_wherever_the_reads_cut_them(line_ending: bytes) -> None:
    body = BODY.replace(b"\n", line_ending)
    expected = [event.replace(b"\n", line_ending) for event in [*CONTENT, USAGE_CHUNK]]
    for at in range(len(body) + 1):
        events, splitter = split_in_two(body, at)
        assert [event.data for event in events] == expected, at
        assert [event.is_usage_only for event in events] == [False, False, False, True], at
        assert splitter.usage == EXPECTED_USAGE and splitter.done, at


def test_one_byte_at_a_time() -> None:
    splitter = EventSplitter()
    events = [event for i in range(len(BODY)) for event in splitter.feed(BODY[i : i + 1])]
    assert b"".join(event.data for event in events) == b"".join(CONTENT) + USAGE_CHUNK
    assert splitter.usage == EXPECTED_USAGE


def test_null_usage_on_every_chunk_is_not_usage() -> None:
    splitter = EventSplitter()
    events = splitter.feed(b"".join(CONTENT))
    assert splitter.usage is None and not any(event.is_usage_only for event in events)


def test_usage_on_a_chunk_that_still_has_choices_is_captured_but_not_usage_only() -> None:
    """Some OpenAI-compatible servers put usage on the last content chunk: metered, never dropped."""
    last = chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=USAGE)
    splitter = EventSplitter()
    [event] = splitter.feed(last)
    assert event == StreamEvent(last, False) and splitter.usage == EXPECTED_USAGE


def test_usage_with_a_space_after_the_colon_and_the_later_usage_wins() -> None:
    spaced = b'data: {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}\n\n'
    splitter = EventSplitter()
    [first, second] = splitter.feed(spaced + USAGE_CHUNK)
    assert first.is_usage_only and second.is_usage_only
    assert splitter.usage == EXPECTED_USAGE


def test_a_usage_chunk_without_choices_is_not_usage_only() -> None:
    splitter = EventSplitter()
    [event] = splitter.feed(chunk(usage=USAGE))
    assert not event.is_usage_only and splitter.usage == EXPECTED_USAGE


def test_comments_blank_lines_and_done_are_not_events() -> None:
    splitter = EventSplitter()
    assert splitter.feed(b": ping\n\n\n\n: a\n: b\n\ndata:[DONE]\n\n") == []
    assert splitter.done


def test_other_fields_and_a_last_event_without_its_blank_line() -> None:
    splitter = EventSplitter()
    named = b'event: message\ndata: {"choices":[]}\n\n'
    assert splitter.feed(named + b'data: {"x":1}') == [StreamEvent(named)]
    assert splitter.flush() == [StreamEvent(b'data: {"x":1}\n\n')]


def test_undecodable_usage_is_relayed_without_usage() -> None:
    splitter = EventSplitter()
    broken = b'data: {"choices":[],"usage":{"prompt_tokens":\n\n'
    assert splitter.feed(broken) == [StreamEvent(broken)]
    assert splitter.usage is None
