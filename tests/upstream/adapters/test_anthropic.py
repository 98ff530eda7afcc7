"""The Anthropic adapter's rules (SPEC §15), one test each: OpenAI chat requests as Anthropic Messages
requests, Anthropic answers and streams as OpenAI chat completions and chunks."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from switchboard.errors import (
    BadRequest,
    RateLimited,
    SwitchboardError,
    UpstreamBadRequest,
    UpstreamCredentialRejected,
    UpstreamFailed,
)
from switchboard.upstream.adapters.anthropic import AnthropicAdapter
from switchboard.upstream.adapters.anthropic_messages import EMPTY_TEXT, SYSTEM_NOTE
from switchboard.upstream.adapters.relay import AdaptedRelay
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.types import StreamEvent, Usage
from tests.fakes.anthropic_wire import error_event, event, message, stream_of, text, thinking, tool_use
from tests.fakes.provider import FakeProvider
from tests.fakes.script import DEFAULT_REPLY
from tests.upstream.conftest import KEY, TIMEOUTS, MakeTarget, unique

SONNET = "claude-sonnet-4-5"
ADAPTER = AnthropicAdapter()
HELLO = [{"role": "user", "content": "Hello"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "title": "Args", "properties": {"city": {"type": "string"}}},
    },
}
PERSON = {
    "type": "json_schema",
    "json_schema": {
        "name": "person",
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1}, "home": {"$ref": "#/$defs/Place"}},
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}},
        },
    },
}


def sent(body: dict[str, Any], model: str = SONNET, *, stream: bool = False) -> dict[str, Any]:
    """The Anthropic request body the adapter builds."""
    return dict(orjson.loads(ADAPTER.chat_request(model, body, stream=stream).body))


def answered(
    answer: dict[str, Any], body: dict[str, Any] | None = None
) -> tuple[Usage | None, dict[str, Any]]:
    context = ADAPTER.chat_request(SONNET, body or {"messages": HELLO}, stream=False).context
    usage, data = ADAPTER.chat_reply(orjson.dumps(answer), SONNET, context)
    return usage, orjson.loads(data)


def streamed(
    events: list[bytes], body: dict[str, Any] | None = None
) -> tuple[list[StreamEvent], Usage | None]:
    context = ADAPTER.chat_request(SONNET, body or {"messages": HELLO}, stream=True).context
    mapper = ADAPTER.stream_mapper(SONNET, context)
    out: list[StreamEvent] = []
    for raw in events:
        data = b"\n".join(line[5:] for line in raw.splitlines() if line.startswith(b"data:"))
        out += mapper.event(data)
    out += mapper.end()
    return out, mapper.usage


def chunks(events: list[StreamEvent]) -> list[dict[str, Any]]:
    return [orjson.loads(e.data.removeprefix(b"data: ")) for e in events]


def deltas(events: list[StreamEvent]) -> list[dict[str, Any]]:
    return [chunk["choices"][0]["delta"] for chunk in chunks(events) if chunk["choices"]]


# --- the request -------------------------------------------------------------------------------
def test_calls_go_to_v1_messages_with_the_key_in_x_api_key_and_the_api_version() -> None:
    request = ADAPTER.chat_request(SONNET, {"messages": HELLO}, stream=False)
    assert (ADAPTER.kind, ADAPTER.default_base_url, ADAPTER.auth_header) == (
        "anthropic",
        "https://api.anthropic.com",
        "x-api-key",
    )
    assert ADAPTER.fixed_headers == b"anthropic-version: 2023-06-01\r\n"
    assert request.path == "/v1/messages" and request.headers == b""
    assert orjson.loads(request.body)["model"] == SONNET


def test_a_stream_request_asks_anthropic_for_a_stream() -> None:
    assert sent({"messages": HELLO}, stream=True)["stream"] is True
    assert "stream" not in sent({"messages": HELLO, "stream": True})


def test_leading_system_and_developer_messages_become_the_system_prompt() -> None:
    body = sent(
        {
            "messages": [
                {"role": "developer", "content": "Answer in French."},
                {
                    "role": "system",
                    "content": [
                        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
                    ],
                },
                {"role": "system", "content": ""},
                *HELLO,
            ]
        }
    )
    assert body["system"] == [
        {"type": "text", "text": "Answer in French."},
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
    ]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]


def test_a_later_system_message_becomes_a_user_turn_led_by_litellms_operator_note() -> None:
    body = sent(
        {
            "messages": [
                *HELLO,
                {"role": "assistant", "content": "Hi"},
                {"role": "system", "content": "Be formal."},
            ]
        }
    )
    assert body["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": SYSTEM_NOTE}, {"type": "text", "text": "Be formal."}],
    }


def test_consecutive_messages_of_one_side_merge_into_one_turn() -> None:
    body = sent(
        {
            "messages": [
                {"role": "user", "content": "One"},
                {"role": "user", "content": [{"type": "text", "text": "Two"}]},
                {"role": "assistant", "content": "Three"},
                {"role": "assistant", "content": "Four"},
            ]
        }
    )
    assert [(turn["role"], [block["text"] for block in turn["content"]]) for turn in body["messages"]] == [
        ("user", ["One", "Two"]),
        ("assistant", ["Three", "Four"]),
    ]


def test_tool_calls_become_tool_use_blocks_and_results_tool_result_blocks_in_a_user_turn() -> None:
    body = sent(
        {
            "messages": [
                {"role": "user", "content": "Weather in Paris and Rome?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "toolu_01A",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        },
                        {
                            "id": "call_02",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "toolu_01A", "content": "18C"},
                {"role": "tool", "tool_call_id": "call_02", "content": [{"type": "text", "text": "21C"}]},
                {"role": "user", "content": "Which is warmer?"},
            ],
            "tools": [WEATHER],
        }
    )
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "call_02", "name": "get_weather", "input": {}},
        ],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "18C"},
            {"type": "tool_result", "tool_use_id": "call_02", "content": [{"type": "text", "text": "21C"}]},
            {"type": "text", "text": "Which is warmer?"},
        ],
    }


def test_tool_ids_keep_their_spelling_except_characters_anthropic_refuses() -> None:
    call = {"id": "call.7:x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        *HELLO,
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call.7:x", "content": "ok"},
    ]
    body = sent({"messages": messages, "tools": [WEATHER]})
    assert body["messages"][1]["content"][0]["id"] == "call_7_x"
    assert body["messages"][2]["content"][0]["tool_use_id"] == "call_7_x"


def test_tool_calls_replayed_without_tools_get_litellms_dummy_tool() -> None:
    call = {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = sent(
        {
            "messages": [
                *HELLO,
                {"role": "assistant", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "ok"},
            ]
        }
    )
    assert [tool["name"] for tool in body["tools"]] == ["dummy_tool"]


def test_cut_off_tool_arguments_are_closed_and_arguments_that_are_not_json_refused() -> None:
    def replayed(arguments: str) -> dict[str, Any]:
        call = {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        return {"messages": [*HELLO, {"role": "assistant", "tool_calls": [call]}], "tools": [WEATHER]}

    assert sent(replayed('{"city": "Paris", "days": [1, 2'))["messages"][1]["content"][0]["input"] == {
        "city": "Paris",
        "days": [1, 2],
    }
    with pytest.raises(BadRequest):
        sent(replayed("not json"))


def test_data_url_images_become_base64_sources_and_web_urls_url_sources() -> None:
    parts = [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
        {"type": "image_url", "image_url": "https://example.com/cat.jpg"},
        {"type": "image_url", "image_url": "http://example.com/dog.jpg"},  # litellm downloads this one
    ]
    body = sent({"messages": [{"role": "user", "content": parts}]})
    assert body["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {"type": "image", "source": {"type": "url", "url": "http://example.com/dog.jpg"}},
    ]
    with pytest.raises(BadRequest):
        sent(
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "iVBORw0KGgo="}]}]}
        )


def test_a_pdf_file_part_becomes_a_document_block() -> None:
    part = {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0x"}}
    body = sent({"messages": [{"role": "user", "content": [part]}]})
    assert body["messages"][0]["content"] == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
        }
    ]


def test_empty_text_becomes_litellms_placeholder_and_final_assistant_text_loses_trailing_space() -> None:
    body = sent(
        {"messages": [{"role": "user", "content": "  "}, {"role": "assistant", "content": "The answer is  "}]}
    )
    assert body["messages"][0]["content"] == [{"type": "text", "text": EMPTY_TEXT}]
    assert body["messages"][1]["content"] == [{"type": "text", "text": "The answer is"}]


def test_a_conversation_of_system_messages_only_is_refused() -> None:
    with pytest.raises(BadRequest):
        sent({"messages": [{"role": "system", "content": "Be brief."}]})


def test_max_tokens_or_max_completion_tokens_become_max_tokens() -> None:
    assert sent({"messages": HELLO, "max_tokens": 100})["max_tokens"] == 100
    assert sent({"messages": HELLO, "max_completion_tokens": 50.4})["max_tokens"] == 50


def test_without_a_cap_the_model_is_asked_for_its_maximum_output_from_litellms_map() -> None:
    assert sent({"messages": HELLO})["max_tokens"] == 64000
    assert sent({"messages": HELLO}, "claude-opus-4-6")["max_tokens"] == 128000
    assert sent({"messages": HELLO}, "claude-3-5-haiku-latest")["max_tokens"] == 4096  # not in the map


def test_sampling_parameters_pass_and_stop_becomes_stop_sequences() -> None:
    body = sent({"messages": HELLO, "temperature": 0.3, "top_p": 0.8, "stop": "END"})
    assert (body["temperature"], body["top_p"], body["stop_sequences"]) == (0.3, 0.8, ["END"])
    assert sent({"messages": HELLO, "stop": ["a", "b"]})["stop_sequences"] == ["a", "b"]


def test_models_without_sampling_parameters_refuse_them_except_temperature_1() -> None:
    assert sent({"messages": HELLO, "temperature": 1}, "claude-opus-4-7")["temperature"] == 1
    with pytest.raises(BadRequest):
        sent({"messages": HELLO, "temperature": 0.5}, "claude-opus-4-7")


def test_openai_parameters_anthropic_has_no_use_for_are_refused_other_fields_dropped() -> None:
    with pytest.raises(BadRequest) as refused:
        sent({"messages": HELLO, "seed": 1, "logprobs": True})
    assert refused.value.param == "seed"
    body = sent(
        {"messages": HELLO, "n": 1, "seed": None, "stream_options": {"include_usage": True}, "api_base": "x"}
    )
    assert set(body) == {"model", "messages", "max_tokens"}


def test_tools_become_anthropic_tools_with_an_input_schema() -> None:
    assert sent({"messages": HELLO, "tools": [WEATHER]})["tools"] == [
        {
            "name": "get_weather",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "type": "custom",
            "description": "Weather in a city",
        }
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ({"type": "function", "function": {"name": "get_weather"}}, {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice_maps_to_anthropics(choice: Any, expected: dict[str, Any]) -> None:
    assert sent({"messages": HELLO, "tools": [WEATHER], "tool_choice": choice})["tool_choice"] == expected


def test_parallel_tool_calls_false_disables_parallel_tool_use() -> None:
    body = sent({"messages": HELLO, "tools": [WEATHER], "parallel_tool_calls": False})
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_tool_choice_is_left_out_when_there_are_no_tools() -> None:
    assert "tool_choice" not in sent({"messages": HELLO, "parallel_tool_calls": False})


def test_tool_names_anthropic_refuses_are_renamed_and_answers_give_them_back() -> None:
    odd = {"type": "function", "function": {"name": "ns.lookup/v2", "parameters": {"type": "object"}}}
    body = {
        "messages": HELLO,
        "tools": [odd],
        "tool_choice": {"type": "function", "function": {"name": "ns.lookup/v2"}},
    }
    request = sent(body)
    assert request["tools"][0]["name"] == request["tool_choice"]["name"] == "ns_lookup_v2"
    _, answer = answered(message([tool_use("toolu_1", "ns_lookup_v2", {})], stop="tool_use"), body)
    assert answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "ns.lookup/v2"


def test_user_becomes_metadata_user_id_unless_it_looks_like_contact_details() -> None:
    assert sent({"messages": HELLO, "user": "user-42"})["metadata"] == {"user_id": "user-42"}
    assert "metadata" not in sent({"messages": HELLO, "user": "ann@example.com"})
    assert "metadata" not in sent({"messages": HELLO, "user": "+44 20 7946 0958"})


def test_json_schema_reaches_structured_outputs_with_their_beta_header() -> None:
    request = ADAPTER.chat_request(SONNET, {"messages": HELLO, "response_format": PERSON}, stream=False)
    assert request.headers == b"anthropic-beta: structured-outputs-2025-11-13\r\n"
    assert orjson.loads(request.body)["output_format"] == {
        "type": "json_schema",
        "schema": {
            "type": "object",
            "properties": {
                "name": {"description": "Note: minimum length: 1.", "type": "string"},
                "home": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
    }


def test_json_schema_on_a_model_without_structured_outputs_forces_a_tool_whose_input_is_the_answer() -> None:
    body = {"messages": HELLO, "response_format": PERSON}
    request = sent(body, "claude-3-5-haiku-20241022")
    assert request["tool_choice"] == {"name": "json_tool_call", "type": "tool"}
    assert request["tools"] == [{"name": "json_tool_call", "input_schema": PERSON["json_schema"]["schema"]}]
    _, answer = answered(
        message([tool_use("toolu_1", "json_tool_call", {"name": "Ann"})], stop="tool_use"), body
    )
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": '{"name": "Ann"}'}
    assert answer["choices"][0]["finish_reason"] == "stop"


def test_json_object_sends_nothing_anthropic_has_no_json_mode() -> None:
    assert set(sent({"messages": HELLO, "response_format": {"type": "json_object"}})) == {
        "model",
        "messages",
        "max_tokens",
    }


def test_reasoning_effort_becomes_a_thinking_budget_below_the_output_cap() -> None:
    assert sent({"messages": HELLO, "reasoning_effort": "medium"})["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2048,
    }
    assert sent({"messages": HELLO, "reasoning_effort": "low"})["max_tokens"] == 1024 + 4096
    assert "thinking" not in sent({"messages": HELLO, "reasoning_effort": "none"})


def test_reasoning_effort_on_an_adaptive_model_becomes_its_effort() -> None:
    body = sent({"messages": HELLO, "reasoning_effort": "minimal"}, "claude-opus-4-6")
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "low"}


def test_thinking_parameters_on_a_model_that_cannot_think_are_refused() -> None:
    with pytest.raises(BadRequest):
        sent({"messages": HELLO, "reasoning_effort": "low"}, "claude-3-5-haiku-latest")


# --- the answer --------------------------------------------------------------------------------
def test_an_answer_is_an_openai_completion_with_anthropics_id_and_prompt_usage_including_the_cache() -> None:
    usage = {
        "input_tokens": 40,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 300,
        "output_tokens": 9,
    }
    parsed, answer = answered(message([text("Hello "), text("there.")], usage=usage, message_id="msg_01X"))
    assert answer["id"] == "msg_01X" and answer["object"] == "chat.completion"
    assert answer["model"] == "claude-sonnet-4-5-20250929" and isinstance(answer["created"], int)
    assert answer["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello there."},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    assert parsed == Usage(prompt_tokens=440, completion_tokens=9, cached_tokens=300, cache_write_tokens=100)
    assert answer["usage"] == parsed.to_openai()


def test_tool_use_blocks_become_tool_calls_with_their_ids_and_json_arguments() -> None:
    calls = [tool_use("toolu_A", "get_weather", {"city": "Zürich"}), tool_use("toolu_B", "get_time", {})]
    _, answer = answered(message(calls, stop="tool_use"))
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert [(c["id"], c["type"], c["function"]["name"]) for c in choice["message"]["tool_calls"]] == [
        ("toolu_A", "function", "get_weather"),
        ("toolu_B", "function", "get_time"),
    ]
    assert [orjson.loads(c["function"]["arguments"]) for c in choice["message"]["tool_calls"]] == [
        {"city": "Zürich"},
        {},
    ]


def test_thinking_becomes_reasoning_content_and_its_tokens_reasoning_tokens() -> None:
    usage, answer = answered(
        message([thinking("Let me think."), text("42")], usage={"input_tokens": 5, "output_tokens": 20})
    )
    assert answer["choices"][0]["message"]["reasoning_content"] == "Let me think."
    assert usage is not None and usage.reasoning_tokens == 4  # cl100k_base, as litellm counts it
    reported = {"input_tokens": 5, "output_tokens": 20, "output_tokens_details": {"thinking_tokens": 11}}
    usage, _ = answered(message([thinking("Let me think."), text("42")], usage=reported))
    assert usage is not None and usage.reasoning_tokens == 11


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "stop"),
    ],
)
def test_stop_reasons_become_finish_reasons(stop: str, finish: str) -> None:
    assert answered(message([text("x")], stop=stop))[1]["choices"][0]["finish_reason"] == finish


@pytest.mark.parametrize(
    "body",
    [
        b"<html>bad gateway</html>",
        b"[1, 2]",
        b'{"type": "error", "error": {"type": "api_error", "message": "boom"}}',
        b"{}",
    ],
)
def test_a_200_that_is_not_a_message_is_the_providers_failure(body: bytes) -> None:
    with pytest.raises(UpstreamFailed):
        ADAPTER.chat_reply(body, SONNET)


# --- the stream --------------------------------------------------------------------------------
def test_every_chunk_carries_the_message_id_and_the_first_names_the_role() -> None:
    events, _ = streamed(stream_of(message([text("Hello there, friend.")], message_id="msg_01S")))
    parsed = chunks(events)
    assert {c["id"] for c in parsed} == {"msg_01S"} and {c["model"] for c in parsed} == {SONNET}
    assert {c["object"] for c in parsed} == {"chat.completion.chunk"}
    assert parsed[0]["choices"][0]["delta"]["role"] == "assistant"
    assert "".join(d.get("content") or "" for d in deltas(events)) == "Hello there, friend."


def test_the_finish_chunk_is_followed_by_one_usage_only_chunk() -> None:
    usage = {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 7}
    events, parsed = streamed(stream_of(message([text("Hi")], usage=usage)))
    assert [e.is_usage_only for e in events][-2:] == [False, True] and not any(
        e.is_usage_only for e in events[:-1]
    )
    finish, last = chunks(events)[-2:]
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert parsed == Usage(prompt_tokens=15, completion_tokens=7, cached_tokens=5)
    assert last["choices"] == [] and last["usage"] == parsed.to_openai()


def test_streamed_tool_calls_name_the_call_once_then_send_indexed_argument_pieces() -> None:
    calls = [tool_use("toolu_A", "get_weather", {"city": "Paris"}), tool_use("toolu_B", "get_time", {})]
    events, _ = streamed(stream_of(message(calls, stop="tool_use"), piece=5))
    pieces = [call for d in deltas(events) for call in d.get("tool_calls") or []]
    assert pieces[0] == {
        "index": 0,
        "id": "toolu_A",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert all(set(p) == {"index", "function"} for p in pieces[1:] if p.get("id") is None)
    joined = {i: "".join(p["function"]["arguments"] for p in pieces if p["index"] == i) for i in (0, 1)}
    assert orjson.loads(joined[0]) == {"city": "Paris"} and joined[1] == "{}"  # no arguments: "{}"
    assert chunks(events)[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_streamed_thinking_becomes_reasoning_content() -> None:
    events, usage = streamed(stream_of(message([thinking("Let me think."), text("42")])))
    assert "".join(d.get("reasoning_content") or "" for d in deltas(events)) == "Let me think."
    assert usage is not None and usage.reasoning_tokens == 4


def test_a_streamed_json_mode_tool_is_the_answers_content() -> None:
    body = {"messages": HELLO, "response_format": PERSON}
    context = ADAPTER.chat_request("claude-3-5-haiku-20241022", body, stream=True).context
    mapper = ADAPTER.stream_mapper("claude-3-5-haiku-20241022", context)
    out: list[StreamEvent] = []
    for raw in stream_of(message([tool_use("toolu_J", "json_tool_call", {"name": "Ann"})], stop="tool_use")):
        out += mapper.event(raw.split(b"data: ", 1)[1])
    assert "".join(d.get("content") or "" for d in deltas(out)) == '{"name":"Ann"}'
    assert not any("tool_calls" in d for d in deltas(out))
    assert chunks(out)[-2]["choices"][0]["finish_reason"] == "stop"


def test_pings_and_event_types_the_gateway_does_not_know_are_ignored() -> None:
    mapper = ADAPTER.stream_mapper(SONNET)
    assert mapper.event(b'{"type": "ping"}') == [] and mapper.event(b'{"type": "something_new"}') == []


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("overloaded_error", UpstreamFailed),
        ("api_error", UpstreamFailed),
        ("rate_limit_error", RateLimited),
        ("invalid_request_error", UpstreamBadRequest),
        ("authentication_error", UpstreamCredentialRejected),
    ],
)
def test_an_error_event_is_raised_as_the_gateways_error(kind: str, error: type[SwitchboardError]) -> None:
    with pytest.raises(error):
        streamed([stream_of(message([text("Hi")]))[0], error_event(kind, "stopped")])


def test_a_stream_that_ends_before_its_answer_did_fails() -> None:
    with pytest.raises(UpstreamFailed):
        streamed(stream_of(message([text("Hello")]))[:4])


def test_an_event_before_message_start_fails() -> None:
    with pytest.raises(UpstreamFailed):
        streamed(
            [
                event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
                )
            ]
        )


# --- over the relay's pooled connections, against the fake provider -------------------------
@pytest.fixture
async def relay() -> AsyncIterator[AdaptedRelay]:
    connections = ProviderConnections(TIMEOUTS)
    yield AdaptedRelay(connections, ADAPTER)
    await connections.aclose()


async def test_over_the_relay_a_call_carries_the_key_and_version_and_comes_back_openai_shaped(
    relay: AdaptedRelay, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("claude")
    fake_provider.script(model, prompt_tokens=30, completion_tokens=9, cached_tokens=10)
    reply = await relay.chat(target("anthropic", model), {"messages": HELLO, "max_tokens": 50})
    assert orjson.loads(reply.body)["choices"][0]["message"] == {
        "role": "assistant",
        "content": DEFAULT_REPLY,
    }
    assert reply.usage == Usage(prompt_tokens=30, completion_tokens=9, cached_tokens=10)
    [seen] = fake_provider.received(model)
    assert (seen.path, seen.api_key, seen.headers["anthropic-version"]) == ("/v1/messages", KEY, "2023-06-01")
    assert seen.body == {
        "model": model,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "max_tokens": 50,
    }


async def test_over_the_relay_a_stream_ends_with_the_usage_chunk(
    relay: AdaptedRelay, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("claude")
    fake_provider.script(model, prompt_tokens=12, completion_tokens=6)
    stream = relay.chat_stream(
        target("anthropic", model), {"messages": HELLO, "tools": [WEATHER], "stream": True}
    )
    events = [event async for event in stream]
    call = "".join(
        c["function"].get("arguments") or "" for d in deltas(events) for c in d.get("tool_calls") or []
    )
    assert orjson.loads(call) == {"location": "Paris"}
    assert events[-1].is_usage_only and stream.usage == Usage(prompt_tokens=12, completion_tokens=6)
    assert fake_provider.received(model)[0].body["stream"] is True


def test_the_adapter_path_never_imports_litellm() -> None:
    script = (
        "import sys\n"
        "from switchboard.upstream.adapters.anthropic import AnthropicAdapter\n"
        "adapter = AnthropicAdapter()\n"
        "request = adapter.chat_request('claude-sonnet-4-5', {'messages': [{'role': 'user', 'content': 'x'}],"
        " 'reasoning_effort': 'low'}, stream=False)\n"
        'answer = b\'{"id":"msg_1","model":"m","content":[{"type":"thinking","thinking":"t"}],'
        '"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}\'\n'
        "adapter.chat_reply(answer, 'claude-sonnet-4-5', request.context)\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
