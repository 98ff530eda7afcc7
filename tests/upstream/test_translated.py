"""Anthropic and Gemini answer in OpenAI's format through litellm's translation, usage included."""

from __future__ import annotations

import base64
import struct

import orjson
import pytest

from switchboard.errors import BadRequest
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import Usage
from tests.fakes.provider import FakeProvider
from tests.fakes.script import DEFAULT_REPLY
from tests.upstream.conftest import KEY, MESSAGES, TOOLS, MakeTarget, unique

PATHS = {"anthropic": "/v1/messages", "gemini": "/v1beta/models/{model}:generateContent"}


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
async def test_non_stream_completion_is_openai_json_with_exact_usage(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, prompt_tokens=30, completion_tokens=9, cached_tokens=10)
    reply = await upstream.chat(
        target(provider, model), {"model": "alias", "messages": MESSAGES, "max_tokens": 50}
    )
    body = orjson.loads(reply.body)
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": DEFAULT_REPLY}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 30 and body["usage"]["completion_tokens"] == 9
    assert reply.usage == Usage(prompt_tokens=30, completion_tokens=9, cached_tokens=10)
    [seen] = fake_provider.received(model)
    assert seen.path == PATHS[provider].format(model=model)
    assert seen.api_key == KEY


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
async def test_stream_is_openai_sse_with_a_flagged_usage_only_chunk(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, prompt_tokens=12, completion_tokens=6)
    stream = upstream.chat_stream(
        target(provider, model), {"messages": MESSAGES, "max_tokens": 50, "stream": True}
    )
    events = [event async for event in stream]
    assert all(e.data.startswith(b"data: {") and e.data.endswith(b"\n\n") for e in events)
    chunks = [orjson.loads(e.data[6:]) for e in events]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == DEFAULT_REPLY
    assert [e.is_usage_only for e in events][-1] is True and not any(e.is_usage_only for e in events[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 12
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]][-1] == "stop"
    assert stream.usage == Usage(prompt_tokens=12, completion_tokens=6)
    assert stream.client_wants_usage is False


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
async def test_tool_calls_come_back_in_openai_shape(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    reply = await upstream.chat(
        target(provider, model), {"messages": MESSAGES, "tools": TOOLS, "max_tokens": 50}
    )
    call = orjson.loads(reply.body)["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert orjson.loads(call["function"]["arguments"]) == {"location": "Paris"}


async def test_litellm_kwargs_in_the_body_cannot_redirect_the_call(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("claude")
    body = {
        "messages": MESSAGES,
        "max_tokens": 5,
        "api_base": "http://203.0.113.9",
        "base_url": "http://x",
        "extra_headers": {"x-api-key": "other"},
        "mock_response": "pwned",
        "api_key": "other",
    }
    reply = await upstream.chat(target("anthropic", model), body)
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == DEFAULT_REPLY
    [seen] = fake_provider.received(model)
    assert seen.api_key == KEY


async def test_gemini_embeddings_in_openai_shape_floats_and_base64_without_litellm(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gemini-embed")
    floats = orjson.loads((await upstream.embeddings(target("gemini", model), {"input": ["a", "b"]})).body)
    assert [len(item["embedding"]) for item in floats["data"]] == [8, 8]
    packed = await upstream.embeddings(
        target("gemini", model), {"input": ["a", "b"], "encoding_format": "base64"}
    )
    first = orjson.loads(packed.body)["data"][0]["embedding"]
    assert list(struct.unpack("<8f", base64.b64decode(first))) == pytest.approx(
        floats["data"][0]["embedding"]
    )
    [seen, _] = fake_provider.received(model)
    assert seen.path == f"/v1beta/models/{model}:batchEmbedContents" and seen.api_key == KEY
    assert seen.body["requests"][1] == {"model": f"models/{model}", "content": {"parts": [{"text": "b"}]}}
    assert floats["usage"] == {"prompt_tokens": 2, "total_tokens": 2}  # estimated: Gemini reports none


async def test_anthropic_has_no_embeddings(upstream: UpstreamClient, target: MakeTarget) -> None:
    with pytest.raises(BadRequest):
        await upstream.embeddings(target("anthropic", "claude"), {"input": "a"})
