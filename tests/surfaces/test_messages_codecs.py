"""The Messages surface's codecs without a network: request to OpenAI chat, chat answer and chunks to
Anthropic's message and events, the local token count, the error shape and the x-api-key reading."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from switchboard.auth.authenticator import authorization_of
from switchboard.error_shapes import Surface, error_body, surface_for
from switchboard.errors import BadRequest, BudgetExceeded, NotFound, UpstreamCredentialRejected
from switchboard.surfaces.messages_count import IMAGE_TOKENS, count_input_tokens
from switchboard.surfaces.messages_reply import STOP_REASONS, message_reply
from switchboard.surfaces.messages_request import chat_body, check_messages_body, from_agent
from switchboard.surfaces.messages_stream import HeldStop, MessagesStream
from switchboard.upstream.types import StreamEvent, UpstreamReply, UpstreamStream, Usage

PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def test_a_conversation_with_tools_becomes_openai_chat_with_results_after_their_calls() -> None:
    body = {
        "model": "m",
        "max_tokens": 99,
        "system": [{"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}}],
        "stop_sequences": ["END"],
        "top_k": 3,
        "metadata": {"user_id": "u-1"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": PNG}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "sig"},
                    {"type": "text", "text": "Calling."},
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "42"}],
                    },
                    {"type": "text", "text": "and?"},
                ],
            },
            {"role": "system", "content": "a reminder"},
        ],
        "tools": [
            {"name": "lookup", "description": "Finds", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    }
    assert check_messages_body(body) is False
    chat = chat_body(body)
    assert chat["messages"] == [
        {"role": "system", "content": "Rules."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Calling.",
            "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":1}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "42"},
        {"role": "user", "content": [{"type": "text", "text": "and?"}]},
        {"role": "system", "content": "a reminder"},
    ]
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {"name": "lookup", "parameters": {"type": "object"}, "description": "Finds"},
        }
    ]  # the server tool only Anthropic runs is left out
    assert (chat["tool_choice"], chat["parallel_tool_calls"]) == ("required", False)
    assert (chat["max_completion_tokens"], chat["stop"], chat["user"]) == (99, ["END"], "u-1")
    assert "top_k" not in chat and "thinking" not in str(chat)


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "none"}, "none"),
        ({"type": "any"}, "required"),
        ({"type": "tool", "name": "lookup"}, {"type": "function", "function": {"name": "lookup"}}),
    ],
)
def test_tool_choice_maps_to_openais(choice: dict[str, Any], expected: Any) -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    chat = chat_body({**body, "tools": [{"name": "lookup", "input_schema": {}}], "tool_choice": choice})
    assert chat["tool_choice"] == expected


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"role": "user", "content": "x"}], "max_tokens": 5},
        {"model": "m", "messages": [], "max_tokens": 5},
        {"model": "m", "messages": [{"role": "bot", "content": "x"}], "max_tokens": 5},
        {"model": "m", "messages": [{"role": "user", "content": "x"}]},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 0},
        {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 5, "stream": "yes"},
    ],
)
def test_what_anthropic_would_refuse_is_a_400(body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        check_messages_body(body)


def test_an_agents_system_message_becomes_the_system_prompt() -> None:
    applied = {
        "model": "m",
        "system": "caller's",
        "reasoning_effort": "low",
        "messages": [{"role": "system", "content": "agent's"}, {"role": "user", "content": "x"}],
    }
    assert from_agent(applied) == {
        "model": "m",
        "system": [{"type": "text", "text": "agent's"}, {"type": "text", "text": "caller's"}],
        "messages": [{"role": "user", "content": "x"}],
    }


def test_finish_reasons_read_the_adapters_table_backwards() -> None:
    assert STOP_REASONS == {
        "stop": "end_turn",
        "length": "max_tokens",
        "tool_calls": "tool_use",
        "content_filter": "refusal",
        "function_call": "tool_use",
    }


def test_a_chat_answer_becomes_a_message_with_the_call_ids_and_anthropics_usage() -> None:
    chat = {
        "id": "chatcmpl-1",
        "model": "gpt-x",
        "choices": [
            {
                "message": {
                    "content": "Sure.",
                    "tool_calls": [
                        {
                            "id": "call_9",
                            "function": {"name": "lookup", "arguments": '{"q": "a"'},
                        },  # cut short
                    ],
                },
                "finish_reason": "stop",
            }
        ],
    }
    usage = Usage(prompt_tokens=100, completion_tokens=7, cached_tokens=40)
    answer = orjson.loads(message_reply(UpstreamReply(orjson.dumps(chat), usage)).body)
    assert answer["content"] == [
        {"type": "text", "text": "Sure."},
        {"type": "tool_use", "id": "call_9", "name": "lookup", "input": {"q": "a"}},
    ]
    assert answer["stop_reason"] == "tool_use"  # tool calls, whatever the provider said
    assert answer["usage"] == {
        "input_tokens": 60,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 40,
        "output_tokens": 7,
    }


class _Chunks(UpstreamStream):
    def __init__(self, chunks: list[dict[str, Any]], usage: Usage | None = None) -> None:
        self._events = [StreamEvent(b"data: " + orjson.dumps(c) + b"\n\n") for c in chunks]
        self._final = usage
        self.closed = False

    async def __anext__(self) -> StreamEvent:
        if not self._events:
            self.usage = self._final
            raise StopAsyncIteration
        return self._events.pop(0)

    async def aclose(self) -> None:
        self.closed = True


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "model": "gpt-x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def _drain(stream: UpstreamStream) -> list[tuple[str, dict[str, Any]]]:
    raw = b"".join([event.data async for event in stream])
    events = []
    for block in raw.decode().split("\n\n"):
        if block:
            name, data = block.split("\n")
            events.append((name.removeprefix("event: "), orjson.loads(data.removeprefix("data: "))))
    return events


def test_chat_chunks_become_anthropic_events_block_by_block() -> None:
    call = {"index": 0, "id": "call_1", "function": {"name": "lookup", "arguments": '{"q"'}}
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "Hi"}),
        _chunk({"content": " there"}),
        _chunk({"tool_calls": [call]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        _chunk({}, "tool_calls"),
        {"id": "c1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}},
    ]
    stream = MessagesStream(_Chunks(chunks))
    events = asyncio.run(_drain(stream))
    assert [(name, data.get("index")) for name, data in events] == [
        ("message_start", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
        ("message_delta", None),
    ]
    assert all(name == data["type"] for name, data in events)
    assert events[5][1]["content_block"] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "lookup",
        "input": {},
    }
    assert events[-1][1]["delta"]["stop_reason"] == "tool_use"
    assert events[-1][1]["usage"]["input_tokens"] == 12 and events[-1][1]["usage"]["output_tokens"] == 5
    assert stream.end.startswith(b"event: message_stop\n")  # sent by the relay once the call is settled


def test_a_chat_stream_without_a_usage_chunk_still_ends_with_message_delta() -> None:
    chunks = [_chunk({"content": "x"}), _chunk({}, "length")]
    events = asyncio.run(_drain(MessagesStream(_Chunks(chunks, Usage(3, 1)))))
    assert [name for name, _ in events][-2:] == ["content_block_stop", "message_delta"]
    assert events[-1][1]["delta"]["stop_reason"] == "max_tokens"
    assert events[-1][1]["usage"]["output_tokens"] == 1


def test_a_native_stream_passes_as_it_came_but_for_message_stop_which_is_held() -> None:
    stop = b'event: message_stop\ndata: {"type":"message_stop"     }\n\n'
    native = [b'event: ping\ndata: {"type": "ping"}\n\n', stop]

    class _Native(UpstreamStream):
        async def __anext__(self) -> StreamEvent:
            if not native:
                raise StopAsyncIteration
            return StreamEvent(native.pop(0))

        async def aclose(self) -> None:
            pass

    held = HeldStop(_Native())

    async def drain() -> list[bytes]:
        return [event.data async for event in held]

    assert asyncio.run(drain()) == [b'event: ping\ndata: {"type": "ping"}\n\n']
    assert held.end == stop  # the provider's own bytes


def test_the_local_count_reads_text_tools_and_counts_images_whole() -> None:
    text_only = {"messages": [{"role": "user", "content": "hello " * 100}]}
    with_image = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hello " * 100}, {"type": "image", "source": PNG}],
            }
        ]
    }
    counted = count_input_tokens(text_only)
    assert 100 <= counted <= 110
    assert count_input_tokens(with_image) == counted + IMAGE_TOKENS
    tools = {**text_only, "tools": [{"name": "lookup", "description": "x" * 400, "input_schema": {}}]}
    assert count_input_tokens(tools) > counted + 40


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (BadRequest("bad"), "invalid_request_error"),
        (NotFound("gone"), "not_found_error"),
        (BudgetExceeded("spent", extra={"limit_id": "l"}), "billing_error"),
        (UpstreamCredentialRejected("no"), "invalid_request_error"),
    ],
)
def test_errors_on_the_messages_paths_take_anthropics_shape(error: Any, kind: str) -> None:
    assert surface_for("/v1/messages") is surface_for("/v1/messages/count_tokens") is Surface.ANTHROPIC
    assert surface_for("/v1/chat/completions") is Surface.OPENAI
    assert error_body(error, Surface.ANTHROPIC) == {
        "type": "error",
        "error": {"type": kind, "message": error.message},
    }


def test_x_api_key_is_read_only_on_the_messages_paths() -> None:
    assert authorization_of({"x-api-key": "svc_api_k"}, "/v1/messages") == "Bearer svc_api_k"
    assert authorization_of({"x-api-key": "k", "authorization": "Bearer t"}, "/v1/messages") == "Bearer t"
    assert authorization_of({"x-api-key": "svc_api_k"}, "/v1/chat/completions") is None
