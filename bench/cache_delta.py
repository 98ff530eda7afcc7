"""`--cache-delta N`: a response-cache hit against a relayed call of the same size, in one gateway.

Both sides send the same request to the same gateway process; the cache side adds the header
`x-switchboard-cache: ttl=3600`, so that after its first call (a miss, stored) every call is a hit
that replays the upstream's answer (the same bytes, the same size) without calling it. Rounds run
A-B-B-A (relayed, hit; hit, relayed; ...) so that the machine's drift falls on both sides alike;
the report gives each side's gateway CPU per call and the rounds' paired differences.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from collections import defaultdict

from bench import gateway
from bench.load import run_wrk
from bench.measure import say
from bench.options import REPO, Options
from bench.probe import call, time_to_first_answer
from bench.processes import BenchError
from bench.target import MODES, Endpoint, Mode, Target
from bench.upstream import Upstream

RELAYED = "relayed"
HIT = "cache hit"
_Key = tuple[Mode, int]


def _cached(endpoint: Endpoint) -> Endpoint:
    return dataclasses.replace(endpoint, headers={**endpoint.headers, "x-switchboard-cache": "ttl=3600"})


def _stored(target: Target) -> Target:
    """The cache side: the same calls, asking for the cache; each answered once and stored."""
    cached = dataclasses.replace(target, json=_cached(target.json), stream=_cached(target.stream))
    for mode in MODES:
        for expected in ("miss", "hit"):
            reply = call(cached.endpoint(mode))
            if reply.status != 200 or reply.headers.get("x-switchboard-cache") != expected:
                state = reply.headers.get("x-switchboard-cache")
                raise BenchError(f"{mode}: expected a cache {expected}, got {reply.status} {state}")
    return cached


def _phases(opts: Options, target: Target, side: str) -> dict[_Key, float]:
    found: dict[_Key, float] = {}
    for mode in MODES:
        for concurrency in opts.concurrency:
            run_wrk(opts.work, target, mode, concurrency, 1, warmup=True)
            result = run_wrk(opts.work, target, mode, concurrency, opts.seconds)
            if result.errors.total:
                raise BenchError(f"{side} {mode} c={concurrency}: {result.errors.total} errors")
            found[(mode, concurrency)] = result.cpu_ms_per_call
            db = f" + db {result.db_cpu_ms_per_call:.3f}" if result.db_cpu_seconds else ""
            say(f"    {side:9} {mode:6} c={concurrency:<3} cpu {result.cpu_ms_per_call:.3f}{db} ms/call")
    return found


def _spread(values: list[float]) -> str:
    return f"{statistics.fmean(values):.3f} ({min(values):.3f} to {max(values):.3f})"


def _table(db: str, rounds: int, seconds: int, cpu: dict[tuple[str, _Key], list[float]]) -> str:
    lines = [
        f"### Switchboard on {db}, one worker: {rounds} rounds A-B-B-A, {seconds} s phases",
        "",
        "| gateway CPU per call, ms | relayed: mean (range) | cache hit: mean (range) "
        "| hit minus relayed: mean of the rounds' differences (range) |",
        "|---|---|---|---|",
    ]
    keys = sorted({key for _, key in cpu}, key=lambda k: (MODES.index(k[0]), k[1]))
    for key in keys:
        relayed, hit = cpu[(RELAYED, key)], cpu[(HIT, key)]
        added = [b - a for a, b in zip(relayed, hit, strict=True)]
        lines.append(f"| {key[0]}, c={key[1]} | {_spread(relayed)} | {_spread(hit)} | {_spread(added)} |")
    return "\n".join(lines) + "\n"


def run(opts: Options, upstream: Upstream, rounds: int) -> None:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d-%H%M")
    sections = [f"# A cache hit against a relayed call, {stamp} (`bench/run --cache-delta {rounds}`)\n"]
    for db in opts.dbs:
        say(f"\n== Switchboard on {db}: relayed calls and cache hits in one process, {rounds} rounds")
        cpu: dict[tuple[str, _Key], list[float]] = defaultdict(list)
        with gateway.prepared(db, opts, upstream) as ready:
            child, relayed = ready.start(1)
            try:
                time_to_first_answer(child, relayed.json, gateway.STARTUP_TIMEOUT)
                cached = _stored(relayed)
                for mode in MODES:
                    run_wrk(opts.work, relayed, mode, 16, opts.warmup_seconds, warmup=True)
                    run_wrk(opts.work, cached, mode, 16, opts.warmup_seconds, warmup=True)
                for index in range(rounds):
                    order = (RELAYED, HIT) if index % 2 == 0 else (HIT, RELAYED)
                    say(f"  round {index + 1}")
                    for side in order:
                        target = cached if side == HIT else relayed
                        for key, ms in _phases(opts, target, side).items():
                            cpu[(side, key)].append(ms)
            finally:
                child.stop()
        sections.append(_table(db, rounds, opts.seconds, cpu))
    text = "\n".join(sections)
    opts.results.mkdir(parents=True, exist_ok=True)
    path = opts.results / f"cache-delta-{stamp}.md"
    path.write_text(text)
    say("\n" + text + f"\nWritten to {path.relative_to(REPO)}")
