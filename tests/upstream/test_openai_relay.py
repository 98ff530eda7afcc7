"""The OpenAI-format relay passes bodies through and forwards the provider's bytes unchanged."""

from __future__ import annotations

import gzip
import os
import resource

import orjson
import pytest

from switchboard.errors import UpstreamFailed
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import Usage
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import KEY, MESSAGES, TOOLS, MakeTarget, pooled, unique
from tests.upstream.raw_server import RawProvider, chunked
from tests.upstream.raw_server import answer as respond


async def test_non_stream_reply_is_the_provider_body_byte_for_byte_with_usage(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    fake_provider.script(model, prompt_tokens=21, completion_tokens=5, cached_tokens=3, reasoning_tokens=2)
    reply = await upstream.chat(target("openai", model), {"model": "fast", "messages": MESSAGES})
    [seen] = fake_provider.received(model)
    assert reply.body == seen.sent[0]
    assert reply.usage == Usage(prompt_tokens=21, completion_tokens=5, cached_tokens=3, reasoning_tokens=2)
    assert seen.api_key == KEY and seen.path == "/v1/chat/completions"


async def test_body_is_passed_through_with_only_the_model_replaced(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    body = {
        "model": "openai/whatever",
        "messages": MESSAGES,
        "tools": TOOLS,
        "tool_choice": "auto",
        "response_format": {"type": "json_object"},
        "logprobs": True,
        "n": 2,
        "seed": 7,
        "stop": ["\n"],
        "x_vendor_extension": {"nested": [1, 2.5, None]},
    }
    reply = await upstream.chat(target("openai", model), body)
    [seen] = fake_provider.received(model)
    assert seen.body == {**body, "model": model}
    assert (
        orjson.loads(reply.body)["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
        == "get_weather"
    )


async def test_stream_events_equal_what_the_provider_sent_and_usage_is_captured(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    fake_provider.script(model, reply="one two three", prompt_tokens=4, completion_tokens=3)
    stream = upstream.chat_stream(
        target("openai", model),
        {"model": "x", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}},
    )
    events = [event async for event in stream]
    [seen] = fake_provider.received(model)
    assert [event.data for event in events] == seen.sent[:-1]  # everything but [DONE], unchanged
    assert seen.sent[-1] == b"data: [DONE]\n\n"
    assert [event.is_usage_only for event in events] == [False] * (len(events) - 1) + [True]
    assert stream.usage == Usage(prompt_tokens=4, completion_tokens=3)
    assert stream.client_wants_usage is True


async def test_include_usage_is_forced_and_the_usage_chunk_flagged_when_the_client_did_not_ask(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    stream = upstream.chat_stream(
        target("openai", model),
        {"model": "x", "messages": MESSAGES, "stream": True, "stream_options": {"other": 1}},
    )
    events = [event async for event in stream]
    [seen] = fake_provider.received(model)
    assert seen.body["stream_options"] == {"other": 1, "include_usage": True}
    assert seen.body["stream"] is True
    assert stream.client_wants_usage is False
    assert events[-1].is_usage_only and b'"choices":[]' in events[-1].data
    assert stream.usage == Usage(prompt_tokens=11, completion_tokens=7)


async def test_stream_without_stream_options_gets_them(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    stream = upstream.chat_stream(
        target("openai", model), {"model": "x", "messages": MESSAGES, "stream": True}
    )
    assert [e async for e in stream][-1].is_usage_only
    assert fake_provider.received(model)[0].body["stream_options"] == {"include_usage": True}
    assert stream.client_wants_usage is False


async def test_embeddings_pass_through_with_usage(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("embed")
    fake_provider.script(model, prompt_tokens=5)
    reply = await upstream.embeddings(target("openai", model), {"model": "e", "input": ["a", "b"]})
    [seen] = fake_provider.received(model)
    assert seen.path == "/v1/embeddings" and reply.body == seen.sent[0]
    assert reply.usage == Usage(prompt_tokens=5)
    assert len(orjson.loads(reply.body)["data"]) == 2


async def test_connections_are_reused_across_calls(upstream: UpstreamClient, target: MakeTarget) -> None:
    # A raw server writes each whole answer at once (a stream's [DONE] with the body's end), so
    # whether the connection can be pooled never depends on how fast a loaded machine delivers bytes.
    reply = orjson.dumps({"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    events = (b'data: {"id":"x","choices":[]}\n\n', b"data: [DONE]\n\n")
    head = b"HTTP/1.1 200 OK\r\n"
    plain = respond(head + b"content-type: application/json\r\n", reply)
    streamed = chunked(head + b"content-type: text/event-stream\r\n", *events)
    raw = RawProvider(*[plain, streamed] * 3)
    seen = []
    async with raw.running() as base:
        for _ in range(3):
            await upstream.chat(target("openai", "m", base_url=base), {"messages": MESSAGES})
            async for _event in upstream.chat_stream(
                target("openai", "m", base_url=base), {"messages": MESSAGES}
            ):
                pass
            seen.append(pooled(upstream))
    assert len(raw.requests) == 6 and raw.connections == 1
    [(idle, busy)] = seen[:1]
    assert len(idle) == 1 and busy == 0
    assert all(other == (idle, 0) for other in seen)  # the very same connection every time


async def test_connections_are_reused_in_a_process_past_a_thousand_open_files(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    # select() cannot watch a descriptor numbered 1024 or more: a busy gateway's sockets are, and the
    # check that a pooled connection is still open must not take each one for closed.
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft > 1200, "the test needs more than 1200 open files"
    spare = [os.open(os.devnull, os.O_RDONLY)]
    while spare[-1] < 1100:  # every lower number taken: the provider's sockets are numbered above
        spare.append(os.open(os.devnull, os.O_RDONLY))
    try:
        reply = orjson.dumps(
            {"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
        )
        raw = RawProvider(respond(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n", reply))
        async with raw.running() as base:
            for _ in range(3):
                await upstream.chat(target("openai", "m", base_url=base), {"messages": MESSAGES})
        assert len(raw.requests) == 3 and raw.connections == 1
    finally:
        for fd in spare:
            os.close(fd)


async def test_a_compressed_answer_is_relayed_decompressed_though_identity_was_asked(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    answer = orjson.dumps({"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    raw = RawProvider(
        respond(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n",
            gzip.compress(answer),
        )
    )
    async with raw.running() as base:
        reply = await upstream.chat(target("openai", "m", base_url=base), {"messages": MESSAGES})
    assert reply.body == answer  # the gateway sends its own headers, so never still-encoded bytes
    assert reply.usage == Usage(prompt_tokens=3, completion_tokens=2)
    assert b"accept-encoding: identity" in raw.requests[0].lower()


async def test_a_provider_cookie_is_never_sent_back(upstream: UpstreamClient, target: MakeTarget) -> None:
    raw = RawProvider(
        respond(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nset-cookie: session=abc; Path=/\r\n", b"{}"
        )
    )
    async with raw.running() as base:
        for _ in range(2):
            await upstream.chat(target("openai", "m", base_url=base), {"messages": MESSAGES})
    assert len(raw.requests) == 2 and all(b"cookie" not in head.lower() for head in raw.requests)


async def test_a_redirect_is_not_followed(upstream: UpstreamClient, target: MakeTarget) -> None:
    raw = RawProvider(respond(b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v1/elsewhere\r\n", b""))
    async with raw.running() as base:
        with pytest.raises(UpstreamFailed):
            await upstream.chat(target("openai", "m", base_url=base), {"messages": MESSAGES})
        with pytest.raises(UpstreamFailed):
            await anext(upstream.chat_stream(target("openai", "m", base_url=base), {"messages": MESSAGES}))
    assert len(raw.requests) == 2
