"""`--clients`: CPU per upstream request of candidate async HTTP clients against the same nginx (item 3).

Each client makes the same non-streamed and streamed POSTs at a fixed concurrency inside one uvloop
process; the process's own CPU time (time.process_time) divided by requests is the figure. The last
candidate is the client Switchboard uses (upstream/http1.py), pool, timeouts and SSRF guard included;
`python -m bench.upstream_cpu` measures the whole upstream layer around it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from bench import payloads
from bench.measure import say
from bench.options import Options
from bench.upstream import Upstream

Fetch = Callable[[str, bytes], Awaitable[bytes]]
CONCURRENCY = 16
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench-client"}


async def _drive(fetch: Fetch, url: str, body: bytes, seconds: float) -> tuple[int, float]:
    done = 0
    deadline = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            reply = await fetch(url, body)
            if not reply:
                raise RuntimeError("empty answer")
            done += 1

    started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return done, time.process_time() - started


async def _httpx(url: str, body: bytes, seconds: float) -> tuple[int, float]:
    import httpx

    limits = httpx.Limits(max_connections=2000, max_keepalive_connections=200)
    async with httpx.AsyncClient(limits=limits, trust_env=False) as client:

        async def fetch(u: str, b: bytes) -> bytes:
            async with client.stream("POST", u, content=b, headers=HEADERS) as resp:
                return b"".join([chunk async for chunk in resp.aiter_raw()])

        await _drive(fetch, url, body, 0.5)
        return await _drive(fetch, url, body, seconds)


async def _aiohttp(url: str, body: bytes, seconds: float) -> tuple[int, float]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=2000, keepalive_timeout=60)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def fetch(u: str, b: bytes) -> bytes:
            async with session.post(u, data=b, headers=HEADERS) as resp:
                return b"".join([chunk async for chunk in resp.content.iter_any()])

        await _drive(fetch, url, body, 0.5)
        return await _drive(fetch, url, body, seconds)


class _Raw(asyncio.Protocol):
    """The floor: one keep-alive connection per worker, httptools parsing, no pool logic."""

    def __init__(self) -> None:
        import httptools

        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.done: asyncio.Future[bytes] | None = None

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.done and not self.done.done():
            self.done.set_result(b"".join(self.body))


async def _raw(url: str, body: bytes, seconds: float) -> tuple[int, float]:
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    conns: list[tuple[asyncio.Transport, _Raw]] = []
    for _ in range(CONCURRENCY):
        transport, proto = await loop.create_connection(_Raw, parts.hostname or "127.0.0.1", parts.port or 80)
        conns.append((transport, proto))
    head = (
        f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-length: {len(body)}\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        + "\r\n"
    ).encode()
    free = list(conns)

    async def fetch(u: str, b: bytes) -> bytes:
        transport, proto = free.pop()
        proto.body, proto.done = [], loop.create_future()
        transport.write(head + b)
        try:
            return await proto.done
        finally:
            free.append((transport, proto))

    await _drive(fetch, url, body, 0.5)
    result = await _drive(fetch, url, body, seconds)
    for transport, _ in conns:
        transport.close()
    return result


async def _switchboard(url: str, body: bytes, seconds: float) -> tuple[int, float]:
    from switchboard.kit.secret import Secret
    from switchboard.upstream import endpoints, relay_exchange
    from switchboard.upstream.connection_pool import ProviderConnections
    from switchboard.upstream.types import Timeouts, UpstreamTarget

    timeouts = Timeouts(connect=5.0, first_byte=30.0, idle=30.0)
    connections = ProviderConnections(timeouts)
    pool = connections.pool(allow_private=True)
    base, path = url.rsplit("/chat/completions", 1)[0], "/chat/completions"
    endpoint = endpoints.parse(base, path)
    target = UpstreamTarget(
        "openai", "m", Secret(HEADERS["authorization"].removeprefix("Bearer ")), base, True
    )

    async def fetch(u: str, b: bytes) -> bytes:
        return await relay_exchange.post_json(pool, timeouts, target, endpoint, b)

    try:
        await _drive(fetch, url, body, 0.5)
        return await _drive(fetch, url, body, seconds)
    finally:
        await connections.aclose()


CLIENTS: dict[str, Callable[[str, bytes, float], Coroutine[Any, Any, tuple[int, float]]]] = {
    "httpx (anyio, h11)": _httpx,
    "aiohttp": _aiohttp,
    "raw asyncio + httptools": _raw,
    "switchboard upstream/http1": _switchboard,
}


def run(opts: Options, upstream: Upstream) -> None:
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    say(f"\nCPU per upstream request, {CONCURRENCY} concurrent, uvloop, {opts.seconds} s each")
    for name, client in CLIENTS.items():
        module = {"raw asyncio + httptools": "httptools", "switchboard upstream/http1": "switchboard"}.get(
            name, name.split()[0]
        )
        if importlib.util.find_spec(module) is None:
            say(f"  {name:<26} not installed")
            continue
        for mode, base in (("json", upstream.json_base_url), ("stream", upstream.stream_base_url)):
            body = payloads.request_body(payloads.UPSTREAM_MODEL, mode == "stream")
            done, cpu = asyncio.run(client(f"{base}/chat/completions", body, opts.seconds))
            per_call = cpu * 1000 / done
            say(f"  {name:<26} {mode:<6} {done / opts.seconds:8.0f} req/s  {per_call:.3f} ms CPU/request")
