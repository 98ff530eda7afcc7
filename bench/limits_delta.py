"""`--limits-delta N`: what two limits add to a call, timed in one gateway process.

Two separate runs (`bench/run` and `bench/run --limits`) are minutes apart, and this kind of VM's
speed drifts by a third from one minute to the next: their difference drowned in that drift. Here one
gateway serves every phase, and the same two limits as `--limits` are created before, and deleted
after, every other phase, over N rounds in the order A-B-B-A (no limit, limits; limits, no limit; ...),
so that a drift in time falls on both sides alike. Each round gives a paired difference per kind of
call; the report gives their mean and range beside each side's own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass

from bench import gateway
from bench.load import run_wrk
from bench.measure import say
from bench.options import REPO, Options
from bench.probe import call, time_to_first_answer
from bench.processes import BenchError
from bench.target import MODES, Endpoint, Mode, Target
from bench.upstream import Upstream

LIMITED = "two limits"
FREE = "no limit"
# Present on every answer of a call under a requests limit, absent otherwise (SPEC §13).
_HEADER = "x-ratelimit-limit-requests"
_Key = tuple[Mode, int]


@dataclass
class Switch:
    """Creates and deletes the benchmark's two limits on the running gateway."""

    port: int
    admin: str
    ids: tuple[str, ...] = ()

    def on(self) -> None:
        if not self.ids:  # else on already: A-B-B-A's rounds meet on the same side
            self.ids = gateway.limit_calls(self.port, self.admin)

    def off(self) -> None:
        for limit_id in self.ids:
            url = f"http://127.0.0.1:{self.port}/limits/{limit_id}"
            reply = call(Endpoint(url, b"", {"Authorization": f"Bearer {self.admin}"}), method="DELETE")
            if reply.status != 204:
                raise BenchError(f"DELETE /limits/{limit_id} answered {reply.status}: {reply.body[:300]!r}")
        self.ids = ()


def confirm(target: Target, limited: bool, patience: float = 5.0) -> None:
    """The gateway applies the change (its registry reloads once the change commits) before a phase."""
    deadline = time.monotonic() + patience
    while True:
        reply = call(target.json)
        if reply.status == 200 and (_HEADER in reply.headers) == limited:
            return
        if time.monotonic() > deadline:
            found = "with" if _HEADER in reply.headers else "without"
            wanted = "under" if limited else "free of"
            raise BenchError(f"expected a call {wanted} limits, got {reply.status} {found} {_HEADER}")
        time.sleep(0.02)


def _phases(opts: Options, target: Target, switch: Switch, limited: bool) -> dict[_Key, float]:
    (switch.on if limited else switch.off)()
    confirm(target, limited)
    found: dict[_Key, float] = {}
    for mode in MODES:
        for concurrency in opts.concurrency:
            run_wrk(opts.work, target, mode, concurrency, 1, warmup=True)  # counters, caches, pools
            result = run_wrk(opts.work, target, mode, concurrency, opts.seconds)
            if result.errors.total:
                raise BenchError(f"{mode} c={concurrency}: {result.errors.total} errors")
            found[(mode, concurrency)] = result.cpu_ms_per_call
            db = f" + db {result.db_cpu_ms_per_call:.3f}" if result.db_cpu_seconds else ""
            side = LIMITED if limited else FREE
            say(f"    {side:10} {mode:6} c={concurrency:<3} cpu {result.cpu_ms_per_call:.3f}{db} ms/call")
    return found


def _spread(values: list[float]) -> str:
    return f"{statistics.fmean(values):.3f} ({min(values):.3f} to {max(values):.3f})"


def _table(db: str, rounds: int, seconds: int, cpu: dict[tuple[str, _Key], list[float]], dbcpu: bool) -> str:
    lines = [
        f"### Switchboard on {db}, one worker: {rounds} rounds A-B-B-A, {seconds} s phases",
        "",
        "| gateway CPU per call, ms | no limit: mean (range) | two limits: mean (range) "
        "| limits add: mean of the rounds' differences (range) |",
        "|---|---|---|---|",
    ]
    keys = sorted({key for _, key in cpu}, key=lambda k: (MODES.index(k[0]), k[1]))
    for key in keys:
        free, limited = cpu[(FREE, key)], cpu[(LIMITED, key)]
        added = [b - a for a, b in zip(free, limited, strict=True)]
        row = f"| {key[0]}, c={key[1]} | {_spread(free)} | {_spread(limited)} | {_spread(added)} |"
        lines.append(row)
    if dbcpu:
        lines += ["", "The PostgreSQL server's own CPU is not in these figures (the phase lines print it)."]
    return "\n".join(lines) + "\n"


def run(opts: Options, upstream: Upstream, rounds: int) -> None:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d-%H%M")
    sections = [f"# What two limits add to a call, {stamp} (`bench/run --limits-delta {rounds}`)\n"]
    opts = dataclasses.replace(opts, limits=False)  # the limits are this run's to switch, from off
    for db in opts.dbs:
        say(f"\n== Switchboard on {db}: limits on and off in one process, {rounds} rounds")
        cpu: dict[tuple[str, _Key], list[float]] = defaultdict(list)
        with gateway.prepared(db, opts, upstream) as ready:
            child, target = ready.start(1)
            switch = Switch(ready.port, ready.admin_token)
            try:
                time_to_first_answer(child, target.json, gateway.STARTUP_TIMEOUT)
                for mode in MODES:
                    run_wrk(opts.work, target, mode, 16, opts.warmup_seconds, warmup=True)
                for index in range(rounds):
                    order = (False, True) if index % 2 == 0 else (True, False)
                    say(f"  round {index + 1}")
                    for limited in order:
                        for key, ms in _phases(opts, target, switch, limited).items():
                            cpu[(LIMITED if limited else FREE, key)].append(ms)
            finally:
                child.stop()
        sections.append(_table(db, rounds, opts.seconds, cpu, db == "postgres"))
    text = "\n".join(sections)
    opts.results.mkdir(parents=True, exist_ok=True)
    path = opts.results / f"limits-delta-{stamp}.md"
    path.write_text(text)
    say("\n" + text + f"\nWritten to {path.relative_to(REPO)}")
