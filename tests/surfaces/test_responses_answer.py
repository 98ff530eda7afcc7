"""A chat completion answered as a Responses API `response` object (SPEC §16)."""

from __future__ import annotations

from typing import Any

import orjson
from openai.types.responses import Response

from switchboard.surfaces.responses_answer import response_reply
from switchboard.upstream.types import UpstreamReply, Usage

REQUEST = {"model": "claude-x", "input": "hi", "instructions": "Be brief.", "max_output_tokens": 64}


def chat(message: dict[str, Any], finish: str = "stop") -> bytes:
    return orjson.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "claude-x-2025",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        }
    )


USAGE = Usage(prompt_tokens=12, completion_tokens=5, cached_tokens=3, reasoning_tokens=2)


def strictly_parsed(body: dict[str, Any]) -> Response:
    """The openai SDK's own model, validating strictly (the SDK itself parses leniently; the OpenAI
    Agents SDK validates the usage)."""
    return Response.model_validate(body)


def answer(message: dict[str, Any], finish: str = "stop", request: dict[str, Any] | None = None) -> Any:
    reply = response_reply(UpstreamReply(body=chat(message, finish), usage=USAGE), request or REQUEST)
    assert reply.usage == USAGE  # what is metered is the provider's count, untouched
    return orjson.loads(reply.body)


def test_a_text_answer_is_one_message_item_with_one_output_text_part_and_the_usage() -> None:
    body = answer({"role": "assistant", "content": "Bonjour."})
    assert body["object"] == "response" and body["id"].startswith("resp_")
    assert (body["status"], body["incomplete_details"], body["error"]) == ("completed", None, None)
    assert (body["model"], body["created_at"]) == ("claude-x-2025", 1_700_000_000)
    assert (body["instructions"], body["max_output_tokens"], body["store"]) == ("Be brief.", 64, False)
    [item] = body["output"]
    assert item["type"] == "message" and item["role"] == "assistant" and item["status"] == "completed"
    assert item["id"].startswith("msg_")
    assert item["content"] == [{"type": "output_text", "text": "Bonjour.", "annotations": [], "logprobs": []}]
    assert body["usage"] == {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 17,
    }
    parsed = strictly_parsed(body)
    assert parsed.output_text == "Bonjour."


def test_tool_calls_are_function_call_items_keeping_the_providers_call_ids() -> None:
    calls = [
        {"id": "toolu_01", "type": "function", "function": {"name": "w", "arguments": '{"c":"Paris"}'}},
        {"id": "toolu_02", "type": "function", "function": {"name": "w", "arguments": '{"c":"Rome"}'}},
    ]
    body = answer({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls")
    assert [item["type"] for item in body["output"]] == ["function_call", "function_call"]
    assert [item["call_id"] for item in body["output"]] == ["toolu_01", "toolu_02"]
    assert body["output"][1]["arguments"] == '{"c":"Rome"}'
    assert len({item["id"] for item in body["output"]}) == 2
    strictly_parsed(body)


def test_text_before_a_tool_call_keeps_its_message_item_first() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = answer({"role": "assistant", "content": "Let me look.", "tool_calls": [call]}, "tool_calls")
    assert [item["type"] for item in body["output"]] == ["message", "function_call"]


def test_an_answer_cut_by_the_output_cap_is_incomplete() -> None:
    body = answer({"role": "assistant", "content": "Once upon a"}, "length")
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}
    assert body["output"][0]["status"] == "incomplete"


def test_reasoning_becomes_a_reasoning_item_before_the_message() -> None:
    body = answer({"role": "assistant", "content": "42", "reasoning_content": "Think: 6 x 7."})
    reasoning, message = body["output"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Think: 6 x 7."}]
    assert message["content"][0]["text"] == "42"
    strictly_parsed(body)


def test_an_empty_answer_still_has_its_message() -> None:
    body = answer({"role": "assistant", "content": None})
    assert body["output"][0]["content"] == [
        {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    ]


def test_a_refusal_is_a_refusal_part() -> None:
    body = answer({"role": "assistant", "content": None, "refusal": "I can't help with that."})
    assert body["output"][0]["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]


def test_the_request_settings_are_echoed() -> None:
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": False}
    request = {
        **REQUEST,
        "tools": [tool],
        "tool_choice": "required",
        "temperature": 0.3,
        "text": {"format": {"type": "json_object"}},
        "reasoning": {"effort": "high"},
        "metadata": {"k": "v"},
    }
    body = answer({"role": "assistant", "content": "{}"}, request=request)
    assert body["tools"] == [tool] and body["tool_choice"] == "required"
    assert (body["temperature"], body["text"], body["reasoning"]) == (
        0.3,
        request["text"],
        {"effort": "high"},
    )
    assert body["metadata"] == {"k": "v"} and body["previous_response_id"] is None
