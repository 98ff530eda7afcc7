"""wire/sse.py frames events exactly as OpenAI, Anthropic and the Responses API write them."""

from __future__ import annotations

import orjson

from switchboard.wire.sse import DONE, frame, frame_event, payload_of


def test_a_data_event_is_the_compact_json_and_a_blank_line() -> None:
    assert frame({"id": "c1", "choices": [{"delta": {"content": "é"}}]}) == (
        b'data: {"id":"c1","choices":[{"delta":{"content":"\xc3\xa9"}}]}\n\n'
    )


def test_a_named_event_carries_its_name_on_its_own_line() -> None:
    assert frame_event("message_stop", {"type": "message_stop"}) == (
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )


def test_the_payload_of_a_framed_event_reads_back() -> None:
    payload = {"a": [1, 2], "b": None}
    assert orjson.loads(payload_of(frame(payload))) == payload


def test_done_is_openais_last_event() -> None:
    assert DONE == b"data: [DONE]\n\n"
