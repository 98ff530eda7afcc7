"""CPU per call of Switchboard's own upstream layer (`UpstreamClient`), in-process against nginx.

    .venv/bin/python -m bench.upstream_cpu [--seconds 3] [--repeats 5] [--concurrency 1,16]

Drives `chat` and `chat_stream` exactly as the /v1 relay does (a stream is read event by event,
taking `ready()` after each) inside one uvloop process, and reports the process's CPU time
(time.process_time) per call: the median of the repeats, with their spread. The gateway's figure
per relayed call contains this one; nothing else runs in the process, so it isolates the upstream side.

nginx sends a whole stream in one read, so the SSE splitter is also timed alone on the 22 events as
OpenAI sends them, in one read and one per read.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson

from bench import payloads
from bench.options import BENCH_DIR
from bench.processes import free_port
from bench.upstream import Upstream
from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.sse import EventSplitter
from switchboard.upstream.types import Timeouts, UpstreamTarget

Call = Callable[[], Awaitable[None]]
WARMUP_SECONDS = 0.5


def _clients(upstream: Upstream) -> tuple[UpstreamClient, UpstreamTarget, UpstreamTarget]:
    client = UpstreamClient(Timeouts(connect=5.0, first_byte=30.0, idle=30.0))
    secret = Secret("sk-bench-upstream-cpu")
    json_target = UpstreamTarget("openai", payloads.UPSTREAM_MODEL, secret, upstream.json_base_url, True)
    stream_target = UpstreamTarget("openai", payloads.UPSTREAM_MODEL, secret, upstream.stream_base_url, True)
    return client, json_target, stream_target


def _calls(
    client: UpstreamClient, json_target: UpstreamTarget, stream_target: UpstreamTarget
) -> dict[str, Call]:
    json_body = orjson.loads(payloads.request_body(payloads.MODEL, False))
    stream_body = orjson.loads(payloads.request_body(payloads.MODEL, True))

    async def chat() -> None:
        reply = await client.chat(json_target, json_body)
        if reply.usage is None:
            raise RuntimeError("no usage in the non-streamed answer")

    async def chat_stream() -> None:
        stream = client.chat_stream(stream_target, stream_body)
        events = 0
        try:
            async for _event in stream:
                events += 1 + len(stream.ready())
        finally:
            await stream.aclose()
        if events != payloads.STREAM_EVENTS or stream.usage is None:
            raise RuntimeError(f"stream gave {events} events, usage {stream.usage}")

    return {"json": chat, "stream": chat_stream}


async def _drive(call: Call, concurrency: int, seconds: float) -> tuple[int, float]:
    done = 0
    deadline = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            await call()
            done += 1

    started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, time.process_time() - started


async def _measure(upstream: Upstream, concurrency: tuple[int, ...], seconds: float, repeats: int) -> None:
    client, json_target, stream_target = _clients(upstream)
    try:
        calls = _calls(client, json_target, stream_target)
        for c in concurrency:
            for mode, call in calls.items():
                await _drive(call, c, WARMUP_SECONDS)
                per_call: list[float] = []
                rates: list[float] = []
                for _ in range(repeats):
                    done, cpu = await _drive(call, c, seconds)
                    per_call.append(cpu * 1000 / done)
                    rates.append(done / seconds)
                print(
                    f"  c={c:<3} {mode:<6} {statistics.median(rates):7.0f} calls/s  "
                    f"{statistics.median(per_call):.3f} ms CPU/call (median of {repeats}; "
                    f"min {min(per_call):.3f}, max {max(per_call):.3f})",
                    flush=True,
                )
    finally:
        await client.aclose()


def _openai_events() -> list[bytes]:
    """The benchmark's stream as OpenAI writes it when include_usage is on: `"usage":null` on each chunk."""
    events = []
    for line in payloads.stream_events():
        if line.startswith("data: {") and '"usage"' not in line:
            line = line[:-1] + ',"usage":null}'
        events.append(line.encode() + b"\n\n")
    return events


def splitter_cost(repeats: int) -> None:
    events = _openai_events()
    whole = b"".join(events)
    rounds = 20_000
    for name, reads in (("one read", [whole]), ("one read per event", events)):
        per_stream: list[float] = []
        for _ in range(repeats):
            started = time.process_time()
            for _ in range(rounds):
                splitter = EventSplitter()
                for read in reads:
                    splitter.feed(read)
            per_stream.append((time.process_time() - started) * 1e6 / rounds)
        median = statistics.median(per_stream)
        print(f"  SSE splitter, {len(events) - 1} events + [DONE], {name:<19} {median:.1f} µs per stream")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.upstream_cpu", description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="per repeat (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="default 5; the median is reported")
    parser.add_argument("--concurrency", default="1,16", help="comma-separated (default 1,16)")
    args = parser.parse_args()
    concurrency = tuple(int(x) for x in args.concurrency.split(","))

    import uvloop

    work: Path = BENCH_DIR / ".work" / "upstream-cpu"  # apart from bench/run's nginx, which may be running
    upstream = Upstream(work, free_port())
    try:
        print(f"upstream layer CPU per call, uvloop, nginx on {upstream.base}", flush=True)
        uvloop.run(_measure(upstream, concurrency, args.seconds, args.repeats))
    finally:
        upstream.stop()
    splitter_cost(args.repeats)


if __name__ == "__main__":
    main()
