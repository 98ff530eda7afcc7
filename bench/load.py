"""Load with wrk (one thread, a Lua script for the POST), sampling CPU around each phase."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench import proctree
from bench.machine import CLK_TCK, NPROC, cpu_ticks
from bench.processes import BenchError
from bench.target import Endpoint, Mode, Target

_LUA = """\
wrk.method = "POST"
wrk.body = [==[{body}]==]
{headers}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {{"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,' ..
    '"timeout":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d}}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean, latency.max))
end
"""


@dataclass(frozen=True)
class Errors:
    status: int  # responses with status >= 400
    socket: int  # connect, read, write and timeout errors

    @property
    def total(self) -> int:
        return self.status + self.socket


@dataclass(frozen=True)
class LoadResult:
    mode: Mode
    concurrency: int
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: Errors
    cpu_seconds: float  # of the target's process tree during the phase
    db_cpu_seconds: float  # of the database server's processes serving the target (PostgreSQL)
    other_load: float  # share of the machine used by processes the benchmark did not start

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_seconds * 1000 / self.requests if self.requests else float("nan")

    @property
    def db_cpu_ms_per_call(self) -> float:
        return self.db_cpu_seconds * 1000 / self.requests if self.requests else float("nan")


def find_wrk() -> str:
    found = shutil.which("wrk")
    if not found:
        raise BenchError("wrk is not installed (bench/run installs it with apt-get)")
    return found


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a valid Lua string literal for these values


def write_script(path: Path, endpoint: Endpoint) -> Path:
    headers = {"Content-Type": "application/json", **endpoint.headers}
    lines = "\n".join(f"wrk.headers[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items())
    path.write_text(_LUA.format(body=endpoint.body.decode(), headers=lines))
    return path


def _own_ticks(self_pid: int) -> int:
    """CPU ticks of the benchmark and everything it started (reaped wrk runs included)."""
    return round(proctree.cpu_seconds(self_pid) * CLK_TCK)


def run_wrk(
    work: Path, target: Target, mode: Mode, concurrency: int, seconds: int, warmup: bool = False
) -> LoadResult:
    endpoint = target.endpoint(mode)
    script = write_script(work / f"wrk-{target.name}-{mode}.lua", endpoint)
    argv = [
        find_wrk(),
        "-t1",
        f"-c{concurrency}",
        f"-d{seconds}s",
        "--timeout",
        "10s",
        "--latency",
        "-s",
        str(script),
        endpoint.url,
    ]
    me = os.getpid()
    machine_before, own_before = cpu_ticks(), _own_ticks(me)
    cpu_before = proctree.cpu_seconds(target.pid)
    db_before = proctree.ticks_matching(target.db_marker) if target.db_marker else {}
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=False)
    elapsed = time.perf_counter() - started
    cpu_after = proctree.cpu_seconds(target.pid)
    db_after = proctree.ticks_matching(target.db_marker) if target.db_marker else {}
    machine_after, own_after = cpu_ticks(), _own_ticks(me)
    log = work / "wrk.log"
    with log.open("a") as handle:
        handle.write(f"== {target.name} {mode} c={concurrency} warmup={warmup}\n{out.stdout}{out.stderr}\n")
    summary = next((line for line in out.stdout.splitlines() if line.startswith("WRK_JSON ")), None)
    if out.returncode != 0 or summary is None:
        raise BenchError(f"wrk failed ({out.returncode}): {out.stderr.strip() or out.stdout.strip()}")
    data = json.loads(summary.removeprefix("WRK_JSON "))
    db_seconds = proctree.seconds_since(db_before, db_after)
    foreign = (machine_after.busy - machine_before.busy) - (own_after - own_before) - db_seconds * CLK_TCK
    capacity = max(1.0, elapsed * CLK_TCK * NPROC)
    return LoadResult(
        mode=mode,
        concurrency=concurrency,
        requests=int(data["requests"]),
        seconds=data["duration_us"] / 1e6,
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        errors=Errors(
            status=int(data["status"]),
            socket=int(data["connect"] + data["read"] + data["write"] + data["timeout"]),
        ),
        cpu_seconds=cpu_after - cpu_before,
        db_cpu_seconds=db_seconds,
        other_load=max(0.0, foreign / capacity),
    )
