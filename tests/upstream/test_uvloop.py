"""The gateway serves on uvloop, whose transports differ from asyncio's: the relay's client works on both."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import uvloop

from switchboard.errors import UpstreamFailed, UpstreamTimeout
from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.openai_relay import OpenAIRelay
from switchboard.upstream.types import Timeouts, UpstreamStream, UpstreamTarget, Usage
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import KEY, MESSAGES, TIMEOUTS, pooled, unique
from tests.upstream.raw_server import RawProvider, answer, certificates

BODY = {"messages": MESSAGES, "max_tokens": 5}


def test_calls_streams_timeouts_and_cancellation_on_uvloop(fake_provider: FakeProvider) -> None:
    json_model, stream_model, slow_model, endless_model = (unique("gpt") for _ in range(4))
    fake_provider.script(json_model, prompt_tokens=5, completion_tokens=2)
    fake_provider.script(slow_model, first_byte_delay=5)
    fake_provider.script(endless_model, endless=True, chunk_delay=0.02)

    def target(model: str, first_byte: float | None = None) -> UpstreamTarget:
        base_url = fake_provider.base_url + "/v1"
        return UpstreamTarget("openai", model, Secret(KEY), base_url, True, first_byte=first_byte)

    async def scenario() -> None:
        # Generous for the calls that answer (a busy machine must not fail them); the slow model's
        # 5 s silence meets a half-second bound of its own.
        client = UpstreamClient(Timeouts(connect=5, first_byte=10, idle=5))
        try:
            reply = await client.chat(target(json_model), BODY)
            assert reply.usage == Usage(prompt_tokens=5, completion_tokens=2)
            stream = client.chat_stream(target(stream_model), BODY)
            events = [event async for event in stream]
            assert events[-1].is_usage_only and stream.usage is not None
            idle, busy = pooled(client)
            assert len(idle) == 1 and busy == 0
            with pytest.raises(UpstreamTimeout):
                await client.chat(target(slow_model, first_byte=0.5), BODY)
            endless = client.chat_stream(target(endless_model), BODY)
            reading = asyncio.create_task(anext(endless))
            await reading
            reading = asyncio.create_task(_drain(endless))
            await asyncio.sleep(0.1)
            reading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reading
            assert await fake_provider.wait_disconnect(endless_model) is not None
        finally:
            await client.aclose()

    uvloop.run(scenario())


def test_tls_on_uvloop(tmp_path: Path) -> None:
    certs = certificates(tmp_path)
    completion = b'{"choices":[],"usage":{"prompt_tokens":1}}'

    async def scenario() -> None:
        relay = OpenAIRelay(ProviderConnections(TIMEOUTS, ssl_context=certs.trusting))
        raw = RawProvider(answer(b"HTTP/1.1 200 OK\r\n", completion), tls=certs.server)
        strict = OpenAIRelay(ProviderConnections(TIMEOUTS))
        try:
            async with raw.running() as base:
                target = UpstreamTarget("openai", "m", Secret(KEY), base, True)
                for _ in range(2):
                    assert (await relay.chat(target, BODY)).body == completion
                with pytest.raises(UpstreamFailed, match="could not connect"):
                    await strict.chat(target, BODY)
            # Each request was sent once and the refused one never got in. The second request reuses the
            # kept connection unless its socket held unread bytes when it was taken from the pool (a TLS
            # record the loop had not drained yet, on a busy machine): the stale check then opens a fresh
            # one rather than risk writing to a closed connection (SPEC §21).
            assert len(raw.requests) == 2 and raw.connections in (1, 2)
        finally:
            await relay.connections.aclose()
            await strict.connections.aclose()

    uvloop.run(scenario())


async def _drain(stream: UpstreamStream) -> None:
    async for _ in stream:
        pass
