"""Orchestration: upstream, direct reference, each gateway configuration, report, budgets."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from types import FrameType

from bench import budgets, payloads, proctree, report
from bench.machine import load_average, machine_info
from bench.measure import TargetReport, measure, say
from bench.options import REPO, Options, parse
from bench.probe import time_to_first_answer
from bench.processes import BenchError, free_port
from bench.target import Endpoint, Target
from bench.upstream import Upstream

DUMMY_KEY = "sk-bench-direct-0000"


def direct_target(upstream: Upstream) -> Target:
    auth = {"Authorization": f"Bearer {DUMMY_KEY}"}
    return Target(
        name="direct",
        pid=upstream.child.pid,
        workers=1,
        json=Endpoint(
            f"{upstream.json_base_url}/chat/completions",
            payloads.request_body(payloads.UPSTREAM_MODEL, False),
            auth,
        ),
        stream=Endpoint(
            f"{upstream.stream_base_url}/chat/completions",
            payloads.request_body(payloads.UPSTREAM_MODEL, True),
            auth,
        ),
    )


def _git_sha() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    )
    return out.stdout.strip() or "unknown"


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds through the finally blocks that stop our children


def _write_results(opts: Options, reports: list[TargetReport], info: report.RunInfo) -> Path:
    opts.results.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d-%H%M")
    path = opts.results / f"{stamp}.md"
    path.write_text(report.markdown(reports, info))
    raw = {"info": asdict(info), "targets": [asdict(r) for r in reports]}
    path.with_suffix(".json").write_text(json.dumps(raw, indent=1, default=str))
    return path


Runner = Callable[[Options, Upstream, Target], list[TargetReport]]


def run(opts: Options) -> int:
    opts.work.mkdir(parents=True, exist_ok=True)
    machine = machine_info()
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = load_average()
    say(f"Switchboard benchmark, {started}: {machine.describe()}")
    if load[0] > machine.nproc * 0.25:
        say(
            f"WARNING: load average {load[0]:.2f} on {machine.nproc} CPUs: other work is running; "
            "figures will be noisy (CPU per call is the steadiest)."
        )
    port = free_port()
    upstream = Upstream(opts.work, port)
    reports: list[TargetReport] = []
    try:
        direct = direct_target(upstream)
        upstream_start = time_to_first_answer(upstream.child, direct.json, timeout=10)
        say(f"nginx upstream on 127.0.0.1:{port} answered after {upstream_start:.3f} s")
        if opts.profile or opts.clients:
            from bench import clients, profile

            (profile.run if opts.profile else clients.run)(opts, upstream)
            return 0
        if opts.cache_delta:
            from bench import cache_delta

            cache_delta.run(opts, upstream, opts.cache_delta)
            return 0
        if opts.limits_delta and not opts.instructions:
            from bench import limits_delta

            limits_delta.run(opts, upstream, opts.limits_delta)
            return 0
        if opts.instructions:
            from bench import instructions

            instructions.run(opts, upstream)
            return 0
        for runner in _runners(opts):
            reports += runner(opts, upstream, direct)
        upstream_rss, _ = proctree.rss_bytes(upstream.child.pid)
    finally:
        upstream.stop()
    others = max((max(p.direct.other_load, p.target.other_load) for r in reports for p in r.pairs), default=0)
    info = report.RunInfo(
        started=started,
        machine=machine,
        load_at_start=load,
        max_other_load=others,
        git_sha=_git_sha(),
        phase_seconds=opts.seconds,
        ttfb_samples=opts.ttfb_samples,
        quick=opts.quick,
        upstream_startup_s=upstream_start,
        upstream_rss=upstream_rss,
    )
    text = report.markdown(reports, info)
    path = _write_results(opts, reports, info)
    say("\n" + text + f"\nWritten to {path.relative_to(REPO)}")
    failed = [c for r in reports if r.kind == "switchboard" for c in budgets.checks(r) if not c.passed]
    if opts.check and failed:
        say(f"{len(failed)} budget check(s) failed")
        return 1
    return 0


def _direct_vs_direct(opts: Options, upstream: Upstream, direct: Target) -> list[TargetReport]:
    say("\n== direct vs direct (the noise floor)")
    rep = TargetReport(name="direct (again)", kind="direct", db=None, workers=1)
    measure(opts, direct, direct, rep)
    return [rep]


def _runners(opts: Options) -> list[Runner]:
    if opts.direct_only:
        return [_direct_vs_direct]
    from bench import gateway, litellm_proxy

    runners: list[Runner] = [gateway.runner(db) for db in opts.dbs]
    if opts.litellm:
        runners.append(litellm_proxy.run)
    return runners


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv if argv is not None else sys.argv[1:])
    signal.signal(signal.SIGTERM, _on_term)
    try:
        return run(opts)
    except BenchError as exc:
        say(f"bench: {exc}")
        return 2
    except KeyboardInterrupt:
        say("bench: interrupted; children stopped")
        return 130
