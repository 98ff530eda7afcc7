"""Connect, first-byte and idle timeouts cut a stalled provider, on every kind."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from switchboard.errors import UpstreamTimeout
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.litellm_loader import litellm_module
from switchboard.upstream.types import Timeouts
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import MESSAGES, MakeTarget, unique

PROVIDERS = ["openai", "anthropic", "gemini"]
FAST = Timeouts(connect=0.5, first_byte=0.6, idle=0.4)
BODY = {"messages": MESSAGES, "max_tokens": 5}


@pytest.fixture
async def fast() -> AsyncIterator[UpstreamClient]:
    await litellm_module()  # its first import takes seconds; the timings below are about the calls
    client = UpstreamClient(FAST)
    yield client
    await client.aclose()


@pytest.fixture
def unresponsive_port() -> Iterator[int]:
    """A listener whose accept queue is full: the kernel drops further SYNs, so connect hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.1)
    yield port
    for sock in [*fillers, server]:
        sock.close()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_connect_timeout(
    fast: UpstreamClient, target: MakeTarget, unresponsive_port: int, provider: str
) -> None:
    base = f"http://127.0.0.1:{unresponsive_port}" + ("/v1" if provider == "openai" else "")
    started = time.monotonic()
    with pytest.raises(UpstreamTimeout):
        await fast.chat(target(provider, "m", base_url=base), BODY)
    assert time.monotonic() - started < FAST.first_byte + 0.5


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_first_byte_timeout_non_stream(
    fast: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, first_byte_delay=5)
    started = time.monotonic()
    with pytest.raises(UpstreamTimeout):
        await fast.chat(target(provider, model), BODY)
    assert FAST.first_byte - 0.05 <= time.monotonic() - started < FAST.first_byte + 0.7
    assert await fake_provider.wait_disconnect(model) is not None  # the provider call was cut


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_first_byte_timeout_covers_the_first_stream_event(
    fast: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, stall_after=0)  # headers at once, then silence
    stream = fast.chat_stream(target(provider, model), BODY)
    with pytest.raises(UpstreamTimeout):
        await anext(stream)  # before the first chunk: the caller answers with a JSON error
    assert await fake_provider.wait_disconnect(model) is not None


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_idle_timeout_after_the_first_event_raises_from_the_iterator(
    fast: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, stall_after=4)
    stream = fast.chat_stream(target(provider, model), BODY)
    received = []
    with pytest.raises(UpstreamTimeout):
        async for event in stream:
            received.append(event)
            stalled_since = time.monotonic()
    assert received
    assert time.monotonic() - stalled_since < FAST.idle + 0.5
    assert await fake_provider.wait_disconnect(model) is not None


async def test_a_slow_but_steady_stream_is_not_cut(fake_provider: FakeProvider, target: MakeTarget) -> None:
    # Eight gaps of 0.25 s: the stream outlasts the first-byte timeout, while each gap stays far
    # below the idle timeout (20 times), so a loaded machine's scheduling delays cannot cut it.
    steady = UpstreamClient(Timeouts(connect=5.0, first_byte=1.5, idle=5.0))
    model = unique("gpt")
    fake_provider.script(model, chunk_delay=0.25, reply="a b c d e f g h")
    try:
        started = time.monotonic()
        events = [event async for event in steady.chat_stream(target("openai", model), BODY)]
    finally:
        await steady.aclose()
    assert len(events) == 11  # role, 8 pieces, finish, usage
    assert time.monotonic() - started > 1.5  # it did outlast the first-byte timeout


async def test_a_server_holding_the_body_open_after_done_still_completes_the_stream(
    fake_provider: FakeProvider, target: MakeTarget
) -> None:
    # A long idle timeout: a stream that waited for the body's end instead of ending at [DONE] would
    # take all of it (or fail), far beyond the bound below whatever the machine's load.
    patient = UpstreamClient(Timeouts(connect=5.0, first_byte=10.0, idle=30.0))
    model = unique("gpt")
    fake_provider.script(model, stall_after=1000)  # every event, [DONE] included, then silence
    try:
        started = time.monotonic()
        events = [event async for event in patient.chat_stream(target("openai", model), BODY)]
    finally:
        await patient.aclose()
    assert len(events) == 8 and events[-1].is_usage_only
    assert time.monotonic() - started < 15
