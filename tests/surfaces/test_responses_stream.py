"""The Responses streams the pipeline drives: a chat stream translated, a provider's stream relayed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from switchboard.errors import UpstreamFailed
from switchboard.surfaces.responses_stream import RelayedResponses, ResponsesStream
from switchboard.upstream.types import StreamEvent, UpstreamStream, Usage
from tests.surfaces.responses_sse import check_grammar, parse, types

USAGE = Usage(prompt_tokens=3, completion_tokens=2)


class ListedStream(UpstreamStream):
    """Events given up front; `fail` raises after them, as a provider stream breaking off would."""

    def __init__(self, events: list[StreamEvent], usage: Usage | None, fail: Exception | None = None) -> None:
        self._events = list(events)
        self._usage_at_end = usage
        self._fail = fail
        self.closed = False

    async def __anext__(self) -> StreamEvent:
        if self._events:
            return self._events.pop(0)
        if self._fail is not None:
            raise self._fail
        self.usage = self._usage_at_end
        raise StopAsyncIteration

    def ready(self) -> list[StreamEvent]:
        events, self._events = self._events[:1], self._events[1:]
        return events

    async def aclose(self) -> None:
        self.closed = True


def chat_event(delta: dict[str, Any], finish: str | None = None) -> StreamEvent:
    payload = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return StreamEvent(b"data: " + orjson.dumps(payload) + b"\n\n")


USAGE_CHUNK = StreamEvent(
    b'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n', True
)


async def drain(stream: UpstreamStream) -> bytes:
    out = b""
    async for event in stream:
        assert not event.is_usage_only  # the Responses usage rides on response.completed, always
        out += event.data + b"".join(e.data for e in stream.ready())
    return out


async def test_a_translated_stream_ends_with_the_completed_response_and_passes_the_usage_on() -> None:
    chat = ListedStream(
        [chat_event({"content": "Hi "}), chat_event({"content": "there"}, "stop"), USAGE_CHUNK], USAGE
    )
    stream = ResponsesStream(chat, {"model": "m", "input": "x"})
    data = await drain(stream)
    # The last event is held back for the pipeline to send once the call is settled.
    assert b"response.completed" not in data and b"response.completed" in stream.end
    data += stream.end
    assert b"[DONE]" not in data
    events = parse(data)
    check_grammar(events)
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "Hi there"
    assert events[-1]["response"]["usage"]["total_tokens"] == 5
    assert stream.usage == USAGE  # what the pipeline meters
    await stream.aclose()
    assert chat.closed


async def test_a_failure_before_the_first_chunk_is_raised_with_nothing_sent() -> None:
    stream = ResponsesStream(
        ListedStream([], None, UpstreamFailed("provider 500")), {"model": "m", "input": "x"}
    )
    with pytest.raises(UpstreamFailed):
        await anext(stream)


async def test_a_failure_after_the_first_event_is_rendered_as_responses_events() -> None:
    stream = ResponsesStream(
        ListedStream([chat_event({"content": "par"})], None, UpstreamFailed("reset")),
        {"model": "m", "input": "x"},
    )
    sent = (await anext(stream)).data
    with pytest.raises(UpstreamFailed) as caught:
        await anext(stream)
    events = parse(sent + stream.error_event(caught.value))
    check_grammar(events)
    assert types(events)[-2:] == ["error", "response.failed"]
    assert events[-2]["code"] == "llm_failed"


async def test_a_relayed_stream_passes_the_providers_bytes_and_numbers_a_failure_after_them() -> None:
    provider = [
        StreamEvent(b'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n'),
        StreamEvent(
            b'event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1}\n\n'
        ),
        StreamEvent(b'event: response.output_text.delta\ndata: {"sequence_number":7}\n\n'),
    ]
    stream = RelayedResponses(ListedStream(provider, None, UpstreamFailed("reset")))
    relayed = [event async for event in _until_failure(stream)]
    assert relayed == provider
    [error] = parse(stream.error_event(UpstreamFailed("reset")))
    assert (error["type"], error["sequence_number"], error["code"]) == ("error", 8, "llm_failed")


async def _until_failure(stream: UpstreamStream) -> Any:
    try:
        async for event in stream:
            yield event
    except UpstreamFailed:
        return


async def test_a_relayed_streams_final_event_is_held_back_for_after_settlement() -> None:
    created = StreamEvent(
        b'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n'
    )
    completed = b'event: response.completed\ndata: {"type":"response.completed","sequence_number":1}\n\n'
    stream = RelayedResponses(ListedStream([created, StreamEvent(completed)], USAGE))
    relayed = [event.data async for event in stream]
    assert relayed == [created.data, b""]
    assert stream.end == completed
    assert stream.usage == USAGE
