"""The relay's own HTTP/1.1 client reads every framing a provider may use and pools only clean connections."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path

import orjson
import pytest

from switchboard.errors import UpstreamFailed, UpstreamTimeout
from switchboard.kit.secret import Secret
from switchboard.upstream import connection_pool, resolver
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.openai_relay import OpenAIRelay
from switchboard.upstream.types import Timeouts, UpstreamTarget, Usage
from tests.upstream.conftest import KEY, MESSAGES, TIMEOUTS, MakeTarget, pooled
from tests.upstream.raw_server import RawProvider, answer, certificates, chunked
from tests.upstream.test_guard import answering

OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
COMPLETION = orjson.dumps({"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
BODY = {"messages": MESSAGES}


async def test_a_chunked_answer_is_read_whole_and_the_connection_reused(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    raw = RawProvider(chunked(OK, COMPLETION[:7], COMPLETION[7:20], COMPLETION[20:]))
    async with raw.running() as base:
        for _ in range(3):
            reply = await upstream.chat(target("openai", "m", base_url=base), BODY)
            assert reply.body == COMPLETION and reply.usage == Usage(prompt_tokens=3, completion_tokens=2)
    assert raw.connections == 1 and len(raw.requests) == 3


async def test_the_request_is_one_post_with_the_key_length_and_body(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    raw = RawProvider(answer(OK, COMPLETION))
    async with raw.running() as base:
        await upstream.chat(target("openai", "m-1", base_url=base), BODY)
    head = raw.requests[0].decode()
    assert head.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    lines = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in head.split("\r\n")[1:] if line}
    assert lines["authorization"] == f"Bearer {KEY}"
    assert lines["content-type"] == "application/json" and lines["accept-encoding"] == "identity"
    assert int(lines["content-length"]) == len(raw.bodies[0])
    assert orjson.loads(raw.bodies[0]) == {**BODY, "model": "m-1"}


async def test_a_body_ended_by_closing_the_connection_is_whole_and_not_pooled(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    raw = RawProvider(OK + b"connection: close\r\n\r\n" + COMPLETION, close=True)
    async with raw.running() as base:
        for _ in range(2):
            assert (await upstream.chat(target("openai", "m", base_url=base), BODY)).body == COMPLETION
    assert raw.connections == 2 and pooled(upstream) == ([], 0)


async def test_connection_close_is_honoured(upstream: UpstreamClient, target: MakeTarget) -> None:
    raw = RawProvider(answer(OK + b"connection: close\r\n", COMPLETION), close=True)
    async with raw.running() as base:
        for _ in range(2):
            assert (await upstream.chat(target("openai", "m", base_url=base), BODY)).body == COMPLETION
    assert raw.connections == 2


async def test_an_interim_answer_is_skipped(upstream: UpstreamClient, target: MakeTarget) -> None:
    raw = RawProvider(b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n" + answer(OK, COMPLETION))
    async with raw.running() as base:
        assert (await upstream.chat(target("openai", "m", base_url=base), BODY)).body == COMPLETION


@pytest.mark.parametrize("wbits", [31, 15, -15], ids=["gzip", "zlib", "raw-deflate"])
async def test_compressed_streams_are_decoded_whatever_the_framing(
    upstream: UpstreamClient, target: MakeTarget, wbits: int
) -> None:
    events = b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n' + (
        b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\ndata: [DONE]\n\n'
    )
    packer = zlib.compressobj(wbits=wbits)
    packed = packer.compress(events) + packer.flush()
    encoding = b"gzip" if wbits == 31 else b"deflate"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: " + encoding + b"\r\n"
    raw = RawProvider(chunked(head, packed[:5], packed[5:]))
    async with raw.running() as base:
        stream = upstream.chat_stream(target("openai", "m", base_url=base), BODY)
        received = [event async for event in stream]
    assert b"".join(event.data for event in received) + b"data: [DONE]\n\n" == events
    assert stream.usage == Usage(prompt_tokens=1, completion_tokens=1)


@pytest.mark.parametrize(
    "response",
    [
        b"HTTP/1.1 200 OK\r\ncontent-encoding: br\r\ncontent-length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 4\r\n\r\nnope",
        b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}",  # shorter than announced, then closed
        b"HTTP/1.1 two hundred\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"",  # closed without a word
    ],
    ids=["unknown-encoding", "corrupt-gzip", "short-body", "bad-status", "not-http", "silence"],
)
async def test_an_unreadable_answer_is_an_upstream_failure(
    upstream: UpstreamClient, target: MakeTarget, response: bytes
) -> None:
    raw = RawProvider(response, close=True)
    async with raw.running() as base:
        with pytest.raises(UpstreamFailed) as caught:
            await upstream.chat(target("openai", "m", base_url=base), BODY)
    assert KEY not in str(caught.value)
    assert pooled(upstream) == ([], 0)


async def test_headers_that_never_end_are_cut_before_the_timeout(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    raw = RawProvider(b"HTTP/1.1 200 OK\r\nx-filler: " + b"a" * 70_000)  # and the connection stays open
    async with raw.running() as base:
        with pytest.raises(UpstreamFailed):
            await upstream.chat(target("openai", "m", base_url=base), BODY)


async def test_bytes_after_the_answer_keep_the_connection_out_of_the_pool(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    raw = RawProvider(answer(OK, COMPLETION) + b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
    async with raw.running() as base:
        assert (await upstream.chat(target("openai", "m", base_url=base), BODY)).body == COMPLETION
        deadline = asyncio.get_running_loop().time() + 5
        while pooled(upstream) != ([], 0) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.01)
        assert pooled(upstream) == ([], 0)


async def test_a_connection_the_server_closed_while_idle_is_not_reused(
    upstream: UpstreamClient, target: MakeTarget
) -> None:
    raw = RawProvider(answer(OK, COMPLETION), close=True)  # closes right after answering, keep-alive or not
    async with raw.running() as base:
        await upstream.chat(target("openai", "m", base_url=base), BODY)
        await asyncio.wait_for(raw.gone.wait(), 2)
        await asyncio.sleep(0.05)  # the loop sees the close
        assert (await upstream.chat(target("openai", "m", base_url=base), BODY)).body == COMPLETION
    assert raw.connections == 2


async def test_a_large_answer_arrives_whole(upstream: UpstreamClient, target: MakeTarget) -> None:
    big = orjson.dumps(
        {"choices": [{"message": {"content": "x" * 3_000_000}}], "usage": {"prompt_tokens": 1}}
    )
    raw = RawProvider(answer(OK, big))
    async with raw.running() as base:
        reply = await upstream.chat(target("openai", "m", base_url=base), BODY)
        assert reply.body == big and reply.usage == Usage(prompt_tokens=1)
        assert len(pooled(upstream)[0]) == 1


async def test_a_key_with_a_line_break_is_never_sent(upstream: UpstreamClient, target: MakeTarget) -> None:
    raw = RawProvider(answer(OK, COMPLETION))
    async with raw.running() as base:
        with pytest.raises(UpstreamFailed) as caught:
            await upstream.chat(
                UpstreamTarget("openai", "m", Secret("sk-abc\r\nx-evil: 1"), base, True), BODY
            )
    assert "sk-abc" not in str(caught.value) and raw.requests == []


async def test_calls_wait_for_a_free_connection_at_the_limit(
    monkeypatch: pytest.MonkeyPatch, upstream: UpstreamClient, target: MakeTarget
) -> None:
    monkeypatch.setattr(connection_pool, "MAX_CONNECTIONS", 1)
    raw = RawProvider(answer(OK, COMPLETION))
    async with raw.running() as base:
        replies = await asyncio.gather(
            *(upstream.chat(target("openai", "m", base_url=base), BODY) for _ in range(5))
        )
    assert [reply.body for reply in replies] == [COMPLETION] * 5 and raw.connections == 1


async def test_waiting_for_a_free_connection_is_bounded_by_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch, target: MakeTarget
) -> None:
    monkeypatch.setattr(connection_pool, "MAX_CONNECTIONS", 1)
    client = UpstreamClient(Timeouts(connect=0.2, first_byte=5, idle=5))
    stalled = RawProvider(b"")  # reads the request, never answers
    async with stalled.running() as base:
        first = asyncio.create_task(client.chat(target("openai", "m", base_url=base), BODY))
        deadline = asyncio.get_running_loop().time() + 5
        while pooled(client)[1] != 1:  # the first call holds the only connection
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        with pytest.raises(UpstreamTimeout):
            await client.chat(target("openai", "m", base_url=base), BODY)
        first.cancel()
        await client.aclose()


async def test_idle_connections_are_closed_after_the_keepalive(
    monkeypatch: pytest.MonkeyPatch, upstream: UpstreamClient, target: MakeTarget
) -> None:
    monkeypatch.setattr(connection_pool, "KEEPALIVE_SECONDS", 0.1)
    raw = RawProvider(answer(OK, COMPLETION))
    async with raw.running() as base:
        await upstream.chat(target("openai", "m", base_url=base), BODY)
        assert len(pooled(upstream)[0]) == 1
        await asyncio.wait_for(raw.gone.wait(), 2)
    assert pooled(upstream) == ([], 0)


async def test_tls_with_a_trusted_certificate(tmp_path: Path) -> None:
    certs = certificates(tmp_path)
    relay = OpenAIRelay(ProviderConnections(TIMEOUTS, ssl_context=certs.trusting))
    raw = RawProvider(answer(OK, COMPLETION), tls=certs.server)
    async with raw.running() as base:
        target = _target(base)
        assert (await relay.chat(target, BODY)).body == COMPLETION
        assert (await relay.chat(target, BODY)).body == COMPLETION  # the same connection again
    assert raw.connections == 1 and b"host: localhost:" in raw.requests[0]
    await relay.connections.aclose()


async def test_tls_refuses_an_unknown_authority(tmp_path: Path) -> None:
    certs = certificates(tmp_path)
    relay = OpenAIRelay(ProviderConnections(TIMEOUTS))  # the system's authorities only
    raw = RawProvider(answer(OK, COMPLETION), tls=certs.server)
    async with raw.running() as base:
        with pytest.raises(UpstreamFailed, match="could not connect"):
            await relay.chat(_target(base), BODY)
    assert raw.requests == []
    await relay.connections.aclose()


async def test_tls_refuses_a_certificate_for_another_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resolver, "lookup", answering("127.0.0.1"))
    certs = certificates(tmp_path)
    relay = OpenAIRelay(ProviderConnections(TIMEOUTS, ssl_context=certs.trusting))
    raw = RawProvider(answer(OK, COMPLETION), tls=certs.server)
    async with raw.running(host="provider.example") as base:
        with pytest.raises(UpstreamFailed, match="could not connect"):
            await relay.chat(_target(base), BODY)
    assert raw.requests == []
    await relay.connections.aclose()


def _target(base: str) -> UpstreamTarget:
    return UpstreamTarget("openai", "m", Secret(KEY), base, True)
