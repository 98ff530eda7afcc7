"""Closing a stream, or cancelling the task that reads it, reaches the provider within a second."""

from __future__ import annotations

import asyncio
import time

import pytest

from switchboard.upstream.client import UpstreamClient
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import MESSAGES, MakeTarget, pooled, unique

PROVIDERS = ["openai", "anthropic", "gemini"]
BODY = {"messages": MESSAGES, "max_tokens": 5}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_aclose_cancels_the_provider_call_within_a_second(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, endless=True, chunk_delay=0.02)
    stream = upstream.chat_stream(target(provider, model), BODY)
    for _ in range(5):
        await anext(stream)
    closed_at = time.monotonic()
    await stream.aclose()
    gone = await fake_provider.wait_disconnect(model)
    assert gone is not None and gone.at - closed_at < 1.0
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_cancelling_the_reading_task_cancels_the_provider_call(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, endless=True, chunk_delay=0.02)
    stream = upstream.chat_stream(target(provider, model), BODY)
    reading = asyncio.Event()

    async def consume() -> None:
        async for _ in stream:
            reading.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(reading.wait(), 5)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gone = await fake_provider.wait_disconnect(model)
    assert gone is not None and gone.at - cancelled_at < 1.0
    await stream.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_cancelling_a_non_stream_call_while_waiting_cancels_the_provider_call(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, first_byte_delay=10)
    task = asyncio.create_task(upstream.chat(target(provider, model), BODY))
    while not fake_provider.received(model):
        await asyncio.sleep(0.01)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gone = await fake_provider.wait_disconnect(model)
    assert gone is not None and gone.at - cancelled_at < 1.0


async def test_a_finished_stream_returns_its_connection_to_the_pool(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    async for _ in upstream.chat_stream(target("openai", model), BODY):
        pass
    idle, busy = pooled(upstream)
    assert len(idle) == 1 and busy == 0


async def test_a_stream_closed_mid_body_is_not_pooled(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    fake_provider.script(model, endless=True)
    stream = upstream.chat_stream(target("openai", model), BODY)
    await anext(stream)
    await stream.aclose()
    assert pooled(upstream) == ([], 0)
