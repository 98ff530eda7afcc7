"""A surface relayed to a provider that speaks it: the answer byte for byte, the usage read on the way."""

from __future__ import annotations

import orjson

from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.native import ANTHROPIC_MESSAGES, OPENAI_RESPONSES
from switchboard.upstream.types import Usage
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import KEY, MakeTarget, unique

MESSAGES = [{"role": "user", "content": "Say hello"}]
VERSION = b"anthropic-version: 2023-06-01\r\nanthropic-beta: tools-2024-05-16\r\n"


async def test_anthropic_messages_come_back_as_sent_with_the_model_rewritten_and_headers_passed(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("claude")
    fake_provider.script(model, prompt_tokens=30, completion_tokens=9, cached_tokens=10)
    body = {"model": "anthropic/alias", "max_tokens": 50, "messages": MESSAGES, "metadata": {"user_id": "u"}}
    reply = await upstream.native.json(target("anthropic", model), ANTHROPIC_MESSAGES, body, VERSION)
    [seen] = fake_provider.received(model)
    assert reply.body == seen.sent[0]
    assert seen.body == {**body, "model": model}
    assert seen.path == "/v1/messages" and seen.api_key == KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["anthropic-beta"] == "tools-2024-05-16"
    assert "authorization" not in seen.headers
    # Anthropic's input_tokens leaves out cache reads; the gateway's prompt counts them.
    assert reply.usage == Usage(prompt_tokens=30, completion_tokens=9, cached_tokens=10)


async def test_anthropic_stream_is_relayed_event_for_event_with_its_usage(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("claude")
    fake_provider.script(model, prompt_tokens=12, completion_tokens=6)
    body = {"model": model, "max_tokens": 50, "messages": MESSAGES, "stream": True}
    stream = upstream.native.stream(target("anthropic", model), ANTHROPIC_MESSAGES, body, VERSION)
    relayed = b"".join([event.data async for event in stream])
    [seen] = fake_provider.received(model)
    assert relayed == b"".join(seen.sent)
    assert stream.usage == Usage(prompt_tokens=12, completion_tokens=6)


async def test_responses_are_relayed_as_sent_with_their_usage(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    fake_provider.script(model, prompt_tokens=20, completion_tokens=5, cached_tokens=4, reasoning_tokens=2)
    body = {"model": "x", "input": "Say hello", "previous_response_id": "resp_1", "store": True}
    reply = await upstream.native.json(target("openai", model), OPENAI_RESPONSES, body)
    [seen] = fake_provider.received(model)
    assert seen.path == "/v1/responses" and seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.body == {**body, "model": model}  # previous_response_id and store pass through
    assert reply.body == seen.sent[0]
    assert orjson.loads(reply.body)["object"] == "response"
    assert reply.usage == Usage(prompt_tokens=20, completion_tokens=5, cached_tokens=4, reasoning_tokens=2)


async def test_responses_stream_is_relayed_event_for_event_with_the_completed_usage(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    fake_provider.script(model, prompt_tokens=9, completion_tokens=3)
    body = {"model": model, "input": "Say hello", "stream": True}
    stream = upstream.native.stream(target("openai", model), OPENAI_RESPONSES, body)
    events = [event async for event in stream]
    [seen] = fake_provider.received(model)
    assert b"".join(e.data for e in events) == b"".join(seen.sent)
    assert events[-1].data.startswith(b"event: response.completed\n")
    assert stream.usage == Usage(prompt_tokens=9, completion_tokens=3)
