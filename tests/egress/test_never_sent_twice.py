"""Never sent twice (SPEC §21): a request that may have reached the provider unanswered is not sent
again; a pooled connection the provider closed while idle is found before anything is written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from switchboard.errors import UpstreamDropped, UpstreamUnanswered
from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.egress import Egress
from switchboard.upstream.types import Timeouts, UpstreamTarget
from tests.egress.conftest import TIMEOUTS
from tests.upstream.conftest import KEY, MESSAGES
from tests.upstream.raw_server import RawProvider, ThreadedRawProvider, answer, certificates

BODY = {"messages": MESSAGES, "max_tokens": 5}
OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
COMPLETION = orjson.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
)
# openai: the gateway's own HTTP/1.1 client; mistral: litellm on the httpx pool.
KINDS = ["openai", "mistral"]


def at(kind: str, base_url: str) -> UpstreamTarget:
    return UpstreamTarget(kind, "some-model", Secret(KEY), base_url, allow_private=True)


async def until(condition: object, seconds: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_provider_that_reads_the_request_and_drops_receives_it_once(
    upstream: UpstreamClient, kind: str
) -> None:
    raw = RawProvider(b"", close=True)  # reads the whole request, answers nothing, closes
    async with raw.running() as base_url:
        with pytest.raises(UpstreamDropped) as caught:
            await upstream.chat(at(kind, base_url), BODY)
    assert caught.value.status == 502 and caught.value.openai_code == "upstream_dropped"
    assert len(raw.requests) == 1


async def test_a_dropped_gemini_embedding_request_is_not_sent_again(upstream: UpstreamClient) -> None:
    raw = RawProvider(b"", close=True)
    async with raw.running() as base_url:
        target = UpstreamTarget(
            "gemini", "text-embedding-004", Secret(KEY), base_url[:-3], allow_private=True
        )
        with pytest.raises(UpstreamDropped):
            await upstream.embeddings(target, {"input": "a"})
    assert len(raw.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_a_keep_alive_connection_the_provider_closed_before_the_loop_saw_it_costs_nothing(
    upstream: UpstreamClient, kind: str
) -> None:
    # On threads of its own: answers one request per connection as if keeping it alive, then closes
    # it. Waiting for `closed` blocks this event loop, so the gateway's side has not yet read the
    # close when its next call picks the pooled connection: the stale connection must be found by
    # looking, before the request is written.
    provider = ThreadedRawProvider(lambda head, body: answer(OK, COMPLETION))
    with provider.running() as base_url:
        for call in range(3):
            reply = await upstream.chat(at(kind, base_url), BODY)
            assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == "hi"
            assert provider.closed.acquire(timeout=10)  # blocks the loop on purpose (see the class)
    assert (len(provider.requests), provider.connections) == (3, 3)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_keep_alive_connection_the_provider_closed_while_idle_costs_nothing(
    upstream: UpstreamClient, kind: str
) -> None:
    # Answers as if the connection stays open, then closes it: the next call finds it stale.
    raw = RawProvider(answer(OK, COMPLETION), close=True)
    async with raw.running() as base_url:
        for call in range(3):
            raw.gone.clear()
            reply = await upstream.chat(at(kind, base_url), BODY)
            assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == "hi"
            await until(raw.gone.is_set)  # the provider has closed it; the next call comes at once
            assert raw.connections == call + 1
    assert len(raw.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_a_failed_connect_is_tried_again_on_a_fresh_connection_within_the_attempt(
    tmp_path: Path, kind: str
) -> None:
    """SPEC §21: nothing was written, so the upstream layer connects again; the caller sees one
    exchange (one attempt), and the provider one request."""
    certs = certificates(tmp_path)
    raw = ThreadedRawProvider(lambda head, body: answer(OK, COMPLETION), tls=certs.server, resets=1)
    upstream = UpstreamClient(TIMEOUTS, Egress(ca_bundle=certs.authority))
    try:
        with raw.running("localhost") as base_url:
            reply = await upstream.chat(at(kind, base_url), BODY)
    finally:
        await upstream.aclose()
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == "hi"
    assert raw.connections == 2 and len(raw.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_a_provider_that_reads_the_request_and_never_answers_receives_it_once(
    upstream: UpstreamClient, kind: str
) -> None:
    """SPEC §21 over §14: past the first-byte deadline the request may be running, so it ends the
    call (504) rather than being sent again."""
    raw = RawProvider(b"")  # reads the whole request, answers nothing, keeps the connection open
    async with raw.running() as base_url:
        target = UpstreamTarget(kind, "m", Secret(KEY), base_url, allow_private=True, first_byte=3.0)
        with pytest.raises(UpstreamUnanswered) as caught:
            await upstream.chat(target, BODY)
    assert caught.value.status == 504
    assert len(raw.requests) == 1


async def test_a_gemini_embedding_request_never_answered_is_not_sent_again() -> None:
    quick = UpstreamClient(Timeouts(connect=10.0, first_byte=3.0, idle=30.0))
    raw = RawProvider(b"")  # reads the whole request, answers nothing, keeps the connection open
    try:
        async with raw.running() as base_url:
            target = UpstreamTarget(
                "gemini", "text-embedding-004", Secret(KEY), base_url[:-3], allow_private=True
            )
            with pytest.raises(UpstreamUnanswered):
                await quick.embeddings(target, {"input": "a"})
    finally:
        await quick.aclose()
    assert len(raw.requests) == 1
