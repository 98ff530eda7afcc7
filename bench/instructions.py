"""`--instructions N`: user-space instructions per call of the gateway process, counted by valgrind's
callgrind over N calls of each kind (after 30 to warm up), sequential or, with `--concurrency C`, C
at a time (what the limits' allowances and the writers' batches do under load), less what the
process counts by itself in the same time with no call running (its timers and loops); three rounds
of each kind, alternated, and their median. A count, not a time, but not free of the machine's load:
on a busy machine the same code counts up to 20 % more per call (see docs/benchmarks.md).
Compare two versions side by side in one run on a quiet machine. What it leaves out is the kernel's
share (syscalls, the database server's CPU), which the timed load phases include.

With `--limits-delta R`, one gateway counts R rounds of each kind without and with the two limits of
`--limits`, switched between its phases and alternated A-B-B-A as `--limits-delta` times them, and
reports each round's ratio: two separate processes' counts at C=16 differed by up to half on the
same code (how their calls fell into batches, their databases' state), a round's pair far less."""

from __future__ import annotations

import dataclasses
import http.client
import re
import shutil
import statistics
import subprocess
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import gateway
from bench.limits_delta import FREE, LIMITED, Switch, confirm
from bench.measure import say
from bench.options import Options
from bench.probe import call, call_on
from bench.processes import BenchError, Child
from bench.target import Endpoint
from bench.upstream import Upstream

WARMUP_CALLS = 30
ROUNDS = 3  # of each kind, alternated; the median is reported
IDLE_SECONDS = 20.0  # counted with no call running: the process's own timers and loops, per second
STARTUP_TIMEOUT = 900.0  # imports and migrations run some 50 times slower under callgrind


def _control(*args: str) -> None:
    done = subprocess.run(["callgrind_control", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"callgrind_control {' '.join(args)} failed: {done.stderr.strip()}")


def _newest_total(prefix: Path) -> int:
    dumps = sorted(prefix.parent.glob(prefix.name + ".*"), key=lambda p: p.stat().st_mtime)
    if not dumps:
        raise BenchError("callgrind wrote no profile")
    found = re.search(r"^summary: (\d+)", dumps[-1].read_text(errors="replace"), re.MULTILINE)
    if found is None:
        raise BenchError(f"no summary line in {dumps[-1]}")
    return int(found.group(1))


def _calls(endpoint: Endpoint, count: int, concurrency: int, mode: str) -> None:
    """`count` calls, `concurrency` at a time: at 1 each on a fresh connection (the c=1 counts of
    docs/benchmarks.md); above, each of `concurrency` clients on one kept-alive connection, as wrk in
    the timed phases and the SDKs' connection pools send them (a connection per call staggers the
    calls' arrival behind its accept, and the calls starting together batch less than under load)."""
    if concurrency == 1:
        statuses = [call(endpoint, timeout=120).status for _ in range(count)]
    else:

        def client(share: int) -> list[int]:
            conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=120)
            try:
                return [call_on(conn, endpoint).status for _ in range(share)]
            finally:
                conn.close()

        shares = [count // concurrency + (1 if i < count % concurrency else 0) for i in range(concurrency)]
        with ThreadPoolExecutor(concurrency) as pool:
            statuses = [status for statuses in pool.map(client, shares) for status in statuses]
    bad = [status for status in statuses if status != 200]
    if bad:
        raise BenchError(f"switchboard under callgrind answered {bad[0]} ({mode}), {len(bad)} times")


def _concurrencies(opts: Options) -> tuple[int, ...]:
    """c=1 unless --concurrency was given (its default, 1,16,64, is for the timed phases)."""
    return (1,) if opts.concurrency == (1, 16, 64) else opts.concurrency


def _count(
    child: Child, prefix: Path, endpoint: Endpoint, calls: int, concurrency: int, mode: str, idle_rate: float
) -> float:
    """Instructions per call over `calls` calls of one kind, less the process's own idle work."""
    _control("-z", str(child.pid))
    started = time.perf_counter()
    _calls(endpoint, calls, concurrency, mode)
    time.sleep(1.0)  # let the last call's tail (its log line) finish before counting
    _control("-d", mode, str(child.pid))
    background = idle_rate * (time.perf_counter() - started)
    return (_newest_total(prefix) - background) / calls


def _sides(opts: Options) -> list[tuple[bool, ...]]:
    """Per round, the sides counted in it: the gateway's limits as started (`--limits`), or, with
    `--limits-delta R`, without and with them, alternated A-B-B-A."""
    if not opts.limits_delta:
        return [(opts.limits,)] * ROUNDS
    return [(False, True) if index % 2 == 0 else (True, False) for index in range(opts.limits_delta)]


def run(opts: Options, upstream: Upstream) -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise BenchError("--instructions needs valgrind (Debian's package valgrind)")
    paired = bool(opts.limits_delta)
    if paired:
        opts = dataclasses.replace(opts, limits=False)  # the limits are this run's to switch, from off
    for db in opts.dbs:
        with gateway.prepared(db, opts, upstream) as ready:
            prefix = ready.home / "callgrind.out"
            log = ready.home / "serve-callgrind.log"
            argv = [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={prefix}.%p",
                str(gateway.SWITCHBOARD),
            ]
            argv += ["serve", "--port", str(ready.port), "--workers", "1"]
            child = Child("switchboard under callgrind", argv, log, env=ready.env, cwd=log.parent)
            try:
                child.wait_port(ready.port, STARTUP_TIMEOUT)
                target = gateway._target(f"switchboard {db}", child, ready.port, 1, ready.ids, None)
                switch = Switch(ready.port, ready.admin_token)
                # The process's timers and loops (lease renewal, recovery sweeps, flushes) run by the
                # clock, and under callgrind a call takes some 100 times longer: what they count while
                # the calls run is taken out at the rate counted while no call runs.
                kinds = [(mode, c) for c in _concurrencies(opts) for mode in ("json", "stream")]
                for mode, concurrency in kinds:  # each kind warmed as it runs (its pools, batches)
                    _calls(getattr(target, mode), WARMUP_CALLS, concurrency, mode)
                _control("-z", str(child.pid))
                time.sleep(IDLE_SECONDS)
                _control("-d", "idle", str(child.pid))
                idle_rate = _newest_total(prefix) / IDLE_SECONDS
                # Rounds alternate the kinds; the median of three keeps one round that something else
                # on the machine slowed (more loop wakeups, a checkpoint, a reconnect) from deciding.
                per_round: dict[tuple[bool, str, int], list[float]] = defaultdict(list)
                for sides in _sides(opts):
                    for limited in sides:
                        if paired:
                            (switch.on if limited else switch.off)()
                            confirm(target, limited, patience=STARTUP_TIMEOUT)
                            for mode, concurrency in kinds:  # the allowances taken (or given back) anew
                                _calls(getattr(target, mode), WARMUP_CALLS, concurrency, mode)
                        for mode, concurrency in kinds:
                            endpoint = getattr(target, mode)
                            per_round[limited, mode, concurrency].append(
                                _count(
                                    child, prefix, endpoint, opts.instructions, concurrency, mode, idle_rate
                                )
                            )
                say(f"  idle: {idle_rate / 1e6:.2f} M instructions per second, taken out of the counts")
            finally:
                child.stop()
            for (limited, mode, concurrency), values in per_round.items():
                side = LIMITED if limited else FREE
                say(
                    f"switchboard {db}, {side}: instructions per call: {mode} c={concurrency} "
                    f"{_median(values, 1e6)} M"
                )
            if paired:
                for mode, concurrency in kinds:
                    without, under = per_round[False, mode, concurrency], per_round[True, mode, concurrency]
                    ratios = [b / a for a, b in zip(without, under, strict=True)]
                    say(
                        f"switchboard {db}, {mode} c={concurrency}: "
                        f"two limits / no limit by round: {_median(ratios)}"
                    )


def _median(values: list[float], unit: float = 1.0) -> str:
    return f"{statistics.median(values) / unit:.3f} (rounds {', '.join(f'{v / unit:.3f}' for v in values)})"
