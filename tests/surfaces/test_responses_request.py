"""A Responses API request as the chat completion request that stands in for it (SPEC §16)."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.errors import BadRequest
from switchboard.surfaces.responses_request import chat_body, check_responses_body, from_agent

TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "strict": True,
}


def test_a_string_input_with_instructions_becomes_a_system_and_a_user_message() -> None:
    chat = chat_body(
        {
            "model": "m",
            "input": "hi",
            "instructions": "Be brief.",
            "max_output_tokens": 50,
            "temperature": 0.2,
            "top_p": 0.9,
            "user": "u-1",
            "stream": True,
        }
    )
    assert chat == {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "top_p": 0.9,
        "user": "u-1",
        "stream": True,
        "max_tokens": 50,
    }


def test_function_tools_tool_choice_text_format_and_reasoning_map_to_their_chat_fields() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    chat = chat_body(
        {
            "model": "m",
            "input": "go",
            "tools": [TOOL],
            "tool_choice": {"type": "function", "name": "get_weather"},
            "parallel_tool_calls": False,
            "text": {"format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}},
            "reasoning": {"effort": "low", "summary": "auto"},
        }
    )
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather in a city",
                "parameters": TOOL["parameters"],
                "strict": True,
            },
        }
    ]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["parallel_tool_calls"] is False
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": True},
    }
    assert chat["reasoning_effort"] == "low"


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [({"type": "text"}, None), ({"type": "json_object"}, {"type": "json_object"})],
)
def test_text_and_json_object_formats(fmt: dict[str, Any], expected: Any) -> None:
    chat = chat_body({"model": "m", "input": "x", "text": {"format": fmt, "verbosity": "low"}})
    assert chat.get("response_format") == expected


def test_fields_without_a_chat_meaning_stay_behind() -> None:
    chat = chat_body(
        {
            "model": "m",
            "input": "x",
            "include": ["reasoning.encrypted_content"],
            "truncation": "disabled",
            "metadata": {"k": "v"},
            "store": False,
            "previous_response_id": None,
            "parallel_tool_calls": True,  # without tools chat providers refuse it
            "service_tier": "auto",
        }
    )
    assert chat == {"model": "m", "messages": [{"role": "user", "content": "x"}]}


def test_input_items_become_the_chat_conversation() -> None:
    chat = chat_body(
        {
            "model": "m",
            "input": [
                {"role": "developer", "content": "Rules."},
                {"role": "user", "content": "weather in Paris and Rome?"},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_1",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
                },
                {"type": "function_call", "call_id": "call_a", "name": "w", "arguments": '{"c":"Paris"}'},
                {"type": "function_call", "call_id": "call_b", "name": "w", "arguments": '{"c":"Rome"}'},
                {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
                {
                    "type": "function_call_output",
                    "call_id": "call_b",
                    "output": [{"type": "input_text", "text": "rain"}],
                },
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "and this?"},
                        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
                    ],
                },
            ],
        }
    )
    assert chat["messages"] == [
        {"role": "system", "content": "Rules."},
        {"role": "user", "content": "weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "w", "arguments": '{"c":"Paris"}'}},
                {"id": "call_b", "type": "function", "function": {"name": "w", "arguments": '{"c":"Rome"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_b", "content": "rain"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
            ],
        },
    ]


def test_a_function_call_without_text_before_it_is_an_assistant_message_of_its_own() -> None:
    chat = chat_body(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": "go"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "done"},
            ],
        }
    )
    assert chat["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"store": True}, "store"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"background": True}, "background"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt"),
    ],
)
def test_what_needs_stored_state_is_refused_with_the_reason(extra: dict[str, Any], param: str) -> None:
    with pytest.raises(BadRequest) as caught:
        chat_body({"model": "m", "input": "x", **extra})
    assert caught.value.openai_code == "unsupported_parameter"
    assert caught.value.param == param
    assert "keeps no state" in caught.value.message


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools"),
        ({"input": "x", "tools": [TOOL], "tool_choice": {"type": "web_search"}}, "tool_choice"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input"),
        ({"input": [{"type": "web_search_call", "id": "ws_1"}]}, "input"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-1"}]}]},
            "input",
        ),
    ],
)
def test_what_cannot_be_translated_is_refused_as_unsupported(body: dict[str, Any], param: str) -> None:
    with pytest.raises(BadRequest) as caught:
        chat_body({"model": "m", **body})
    assert (caught.value.openai_code, caught.value.param) == ("unsupported_parameter", param)


@pytest.mark.parametrize(
    "body",
    [
        {"instructions": "only a system prompt"},
        {"input": []},
        {"input": [{"role": "robot", "content": "x"}]},
        {"input": [{"type": "function_call", "call_id": "c"}]},
        {"input": "x", "text": {"format": {"type": "json_schema"}}},
        {"input": "x", "instructions": ["not", "a", "string"]},
    ],
)
def test_malformed_requests_are_400(body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        chat_body({"model": "m", **body})


@pytest.mark.parametrize(
    "body",
    [{"stream": "yes"}, {"max_output_tokens": 0}, {"max_output_tokens": True}, {"input": 42}],
)
def test_the_fields_every_provider_relies_on_are_checked(body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        check_responses_body({"model": "m", **body})


def test_check_returns_whether_the_call_streams() -> None:
    assert check_responses_body({"model": "m", "input": "x", "stream": True}) is True
    assert check_responses_body({"model": "m", "previous_response_id": "resp_1"}) is False


def test_an_agents_additions_come_back_as_responses_fields() -> None:
    applied = {
        "model": "m",
        "input": "hi",
        "instructions": "Caller's rules.",
        "messages": [{"role": "system", "content": "You are a pirate."}],
        "max_tokens": 300,
        "reasoning_effort": "low",
    }
    assert from_agent(applied) == {
        "model": "m",
        "input": "hi",
        "instructions": "You are a pirate.\n\nCaller's rules.",
        "max_output_tokens": 300,
        "reasoning": {"effort": "low"},
    }


def test_the_callers_own_cap_and_effort_win_over_the_agents() -> None:
    applied = {
        "input": "hi",
        "max_output_tokens": 50,
        "reasoning": {"effort": "high", "summary": "auto"},
        "max_tokens": 300,
        "reasoning_effort": "low",
    }
    body = from_agent(applied)
    assert (body["max_output_tokens"], body["reasoning"]) == (50, {"effort": "high", "summary": "auto"})
    assert "instructions" not in body and "messages" not in body
