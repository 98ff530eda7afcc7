"""`--profile`: sample the gateway with py-spy under load and rank where the CPU goes on the hot path."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

from bench import gateway
from bench.load import find_wrk, write_script
from bench.measure import say
from bench.options import REPO, Options
from bench.probe import time_to_first_answer
from bench.processes import BenchError
from bench.target import MODES, Mode, Target
from bench.upstream import Upstream

PY_SPY = REPO / ".venv" / "bin" / "py-spy"
RATE = 250  # samples per second
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")
_COMPONENTS = (
    ("switchboard/", None),
    ("fastapi/", "fastapi"),
    ("starlette/", "starlette"),
    ("pydantic", "pydantic"),
    ("httpx/", "httpx"),
    ("httpcore/", "httpcore"),
    ("h11/", "h11"),
    ("anyio/", "anyio"),
    ("sqlalchemy/", "sqlalchemy"),
    ("aiosqlite/", "aiosqlite"),
    ("asyncpg/", "asyncpg"),
    ("uvicorn/", "uvicorn"),
    ("jwt/", "pyjwt"),
    ("cryptography/", "cryptography"),
    ("orjson", "orjson"),
    ("asyncio/", "asyncio"),
    ("logging/", "logging"),
    ("json/", "json"),
)


def _ensure_py_spy() -> None:
    if PY_SPY.exists():
        return
    say("  installing py-spy from PyPI into .venv")
    pip = [str(REPO / ".venv" / "bin" / "pip"), "install", "-q", "py-spy"]
    if subprocess.run(pip, check=False).returncode:
        raise BenchError("could not install py-spy")


def _short(path: str) -> str:
    for marker in ("site-packages/", "/src/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            return path.split("/", 1)[1] if marker == "/lib/python3." else path
    return path


def component(path: str) -> str:
    short = _short(path)
    for prefix, name in _COMPONENTS:
        if short.startswith(prefix):
            if name is None:  # switchboard: one row per domain
                parts = short.split("/")
                return "switchboard." + (parts[1].removesuffix(".py") if len(parts) > 1 else "")
            return name
    return "stdlib/other" if "/" not in short or short.count("/") <= 1 else short.split("/", 1)[0]


def _parse(raw: Path) -> list[tuple[list[tuple[str, str]], int]]:
    stacks = []
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = []
        for text in stack.split(";"):
            m = _FRAME.match(text)
            if m and m["file"]:  # skip py-spy's "process …" and "thread …" pseudo-frames
                frames.append((m["func"], _short(m["file"])))
        if not frames:
            continue
        stacks.append((frames, int(count)))
    return stacks


def summarise(raw: Path, seconds: float, calls: int, top: int = 25) -> str:
    stacks = _parse(raw)
    total = sum(n for _, n in stacks) or 1
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    by_component: Counter[str] = Counter()
    for frames, n in stacks:
        func, path = frames[-1]
        self_time[f"{func} ({path})"] += n
        by_component[component(path)] += n
        for name in {f"{f} ({p})" for f, p in frames}:
            inclusive[name] += n
    ms_per_sample = 1000 / RATE
    lines = [
        f"{total} samples at {RATE} Hz over {seconds:.0f} s = {total * ms_per_sample / 1000:.1f} s holding "
        f"the GIL; {calls} calls -> {total * ms_per_sample / max(calls, 1):.3f} ms sampled per call "
        "(includes time runnable but not scheduled on a busy machine)",
        "",
        "By component (self time):",
    ]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in by_component.most_common(top)]
    lines += ["", "Top functions, self time:"]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in self_time.most_common(top)]
    lines += ["", "Top switchboard functions, inclusive:"]
    own = [(k, v) for k, v in inclusive.most_common() if "switchboard/" in k]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in own[:top]]
    lines += ["", "Top library functions, inclusive:"]
    lib = [(k, v) for k, v in inclusive.most_common() if "switchboard/" not in k and "(" in k]
    lines += [f"  {n / total:6.1%}  {name}" for name, n in lib[:top]]
    return "\n".join(lines)


def _profile_mode(opts: Options, target: Target, mode: Mode, stamp: str) -> str:
    script = write_script(opts.work / f"wrk-profile-{mode}.lua", target.endpoint(mode))
    seconds = opts.seconds
    # The highest concurrency asked for (default 16 when the default 1,16,64 is given).
    connections = 16 if opts.concurrency == (1, 16, 64) else max(opts.concurrency)
    wrk = subprocess.Popen(
        [
            find_wrk(),
            "-t1",
            f"-c{connections}",
            f"-d{seconds + 3}s",
            "--timeout",
            "10s",
            "-s",
            str(script),
            target.endpoint(mode).url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(1.5)
    raw = opts.results / f"profile-{stamp}-{mode}.txt"
    spy = subprocess.run(
        # --gil: sample only the thread holding the GIL. py-spy's idle detection counts aiosqlite's
        # worker threads, blocked in SimpleQueue.get, as busy; /proc/<pid>/task shows them at ~1 % each.
        [
            str(PY_SPY),
            "record",
            "--pid",
            str(target.pid),
            "--gil",
            "--duration",
            str(seconds),
            "--rate",
            str(RATE),
            "--format",
            "raw",
            "--output",
            str(raw),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    out, _ = wrk.communicate(timeout=seconds + 60)
    if spy.returncode or not raw.exists():
        raise BenchError(f"py-spy failed: {spy.stderr.strip() or spy.stdout.strip()}")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    calls = round(float(match[1]) * seconds) if match else 0
    summary = summarise(raw, seconds, calls)
    return f"### {mode}, concurrency {connections} ({raw.relative_to(REPO)})\n\n```\n{summary}\n```\n"


def run(opts: Options, upstream: Upstream) -> None:
    _ensure_py_spy()
    db = opts.dbs[0] if opts.dbs else "sqlite"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d-%H%M")
    opts.results.mkdir(parents=True, exist_ok=True)
    title = f"Profile of a relayed call, {stamp} (Switchboard on {db}, 1 worker, py-spy --gil {RATE} Hz)"
    sections = [f"# {title}\n"]
    with gateway.prepared(db, opts, upstream) as ready:
        child, target = ready.start(1)
        try:
            time_to_first_answer(child, target.json, gateway.STARTUP_TIMEOUT)
            for mode in MODES:
                say(f"  profiling {mode} calls for {opts.seconds} s")
                sections.append(_profile_mode(opts, target, mode, stamp))
        finally:
            child.stop()
    text = "\n".join(sections)
    path = opts.results / f"profile-{stamp}.md"
    path.write_text(text)
    say("\n" + text + f"\nWritten to {path.relative_to(REPO)}")
