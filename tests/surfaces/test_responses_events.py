"""Chat completion chunks translated into Responses API stream events (SPEC §16)."""

from __future__ import annotations

from typing import Any

from switchboard.surfaces.responses_answer import ResponseFrame
from switchboard.surfaces.responses_events import ResponseEvents
from switchboard.upstream.types import Usage
from tests.surfaces.responses_sse import check_grammar, parse, types

REQUEST = {"model": "gemini-x", "input": "hi"}
USAGE = Usage(prompt_tokens=9, completion_tokens=4, cached_tokens=1, reasoning_tokens=0)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gemini-x-001",
        "choices": choices,
    }


def call(index: int, *, cid: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    out: dict[str, Any] = {"index": index, "type": "function", "function": function}
    if cid is not None:
        out["id"] = cid
    return out


def run(chunks: list[dict[str, Any]], usage: Usage | None = USAGE) -> list[dict[str, Any]]:
    codec = ResponseEvents(ResponseFrame(REQUEST))
    data = b"".join(codec.feed(c) for c in chunks) + codec.finish(usage)
    events = parse(data)
    check_grammar(events)
    return events


def test_a_text_stream_follows_the_responses_grammar_and_completes_with_the_usage() -> None:
    events = run(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Bon"}),
            chunk({"content": "jour."}),
            chunk({}, "stop"),
            chunk(None),  # the usage-only chunk
        ]
    )
    assert types(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["response"]["status"] == "in_progress" and events[0]["response"]["output"] == []
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == ["Bon", "jour."]
    assert events[6]["text"] == "Bonjour."
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["model"] == "gemini-x-001"
    assert final["id"] == events[0]["response"]["id"]
    [message] = final["output"]
    assert message["id"] == events[2]["item"]["id"] and message["status"] == "completed"
    assert message["content"][0]["text"] == "Bonjour."
    assert (final["usage"]["input_tokens"], final["usage"]["output_tokens"]) == (9, 4)
    assert final["usage"]["input_tokens_details"] == {"cached_tokens": 1, "cache_write_tokens": 0}


def test_a_tool_call_streams_its_arguments_and_keeps_the_providers_call_id() -> None:
    events = run(
        [
            chunk({"role": "assistant", "content": None, "tool_calls": [call(0, cid="toolu_9", name="w")]}),
            chunk({"tool_calls": [call(0, args='{"city"')]}),
            chunk({"tool_calls": [call(0, args=': "Paris"}')]}),
            chunk({}, "tool_calls"),
        ]
    )
    assert types(events)[2:] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    added = events[2]["item"]
    assert (added["type"], added["call_id"], added["name"], added["arguments"]) == (
        "function_call",
        "toolu_9",
        "w",
        "",
    )
    assert events[5]["arguments"] == '{"city": "Paris"}' and events[5]["name"] == "w"
    [item] = events[-1]["response"]["output"]
    assert (item["call_id"], item["arguments"], item["status"]) == (
        "toolu_9",
        '{"city": "Paris"}',
        "completed",
    )


def test_whole_calls_in_one_chunk_become_one_item_each() -> None:
    events = run(
        [
            chunk(
                {
                    "tool_calls": [
                        call(0, cid="g1", name="w", args='{"c":"Paris"}'),
                        call(1, cid="g2", name="w", args='{"c":"Rome"}'),
                    ]
                },
                "tool_calls",
            )
        ]
    )
    output = events[-1]["response"]["output"]
    assert [(o["call_id"], o["arguments"]) for o in output] == [
        ("g1", '{"c":"Paris"}'),
        ("g2", '{"c":"Rome"}'),
    ]
    added = [e for e in events if e["type"] == "response.output_item.added"]
    assert [e["output_index"] for e in added] == [0, 1]


def test_text_reasoning_and_calls_each_accumulate_to_their_own_item() -> None:
    events = run(
        [
            chunk({"reasoning_content": "Weather "}),
            chunk({"reasoning_content": "needed."}),
            chunk({"content": "Let me check."}),
            chunk({"tool_calls": [call(0, cid="c1", name="w", args="{}")]}),
            chunk({"content": " One moment."}),  # text after a call still goes to the message
            chunk({}, "tool_calls"),
        ]
    )
    reasoning, message, function = events[-1]["response"]["output"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Weather needed."}]
    assert message["content"][0]["text"] == "Let me check. One moment."
    assert function["call_id"] == "c1"
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert {e["output_index"] for e in deltas} == {1}
    summary = [e for e in events if e["type"] == "response.reasoning_summary_text.delta"]
    assert [e["delta"] for e in summary] == ["Weather ", "needed."]


def test_content_part_added_comes_before_the_first_text_delta() -> None:
    events = run([chunk({"content": "x"}), chunk({}, "stop")])
    names = types(events)
    assert names.index("response.content_part.added") < names.index("response.output_text.delta")


def test_a_stream_cut_by_the_output_cap_ends_incomplete() -> None:
    events = run([chunk({"content": "Once upon a"}), chunk({}, "length")])
    assert events[-1]["type"] == "response.incomplete"
    final = events[-1]["response"]
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"


def test_an_empty_answer_still_has_its_message() -> None:
    events = run([chunk({"role": "assistant", "content": ""}), chunk({}, "stop")])
    assert "response.output_text.delta" not in types(events)
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == ""


def test_a_failure_after_the_first_event_is_an_error_then_response_failed_numbered_after() -> None:
    codec = ResponseEvents(ResponseFrame(REQUEST))
    sent = parse(codec.feed(chunk({"content": "partial"})))
    tail = parse(codec.failure("upstream_error", "the provider stream failed"))
    assert types(tail) == ["error", "response.failed"]
    assert tail[0]["sequence_number"] == sent[-1]["sequence_number"] + 1
    assert (tail[0]["code"], tail[0]["message"]) == ("upstream_error", "the provider stream failed")
    assert tail[1]["response"]["status"] == "failed"
    assert tail[1]["response"]["error"] == {"code": "server_error", "message": "the provider stream failed"}
    check_grammar(sent + tail)
