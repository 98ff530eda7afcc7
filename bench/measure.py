"""Measure one target beside the direct upstream: load phases in pairs, TTFB, memory after load."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from bench import proctree
from bench.load import LoadResult, run_wrk
from bench.machine import load_average
from bench.options import Options
from bench.probe import Ttfb, check_answers, time_to_first_byte
from bench.target import MODES, Mode, Target

TTFB_WARMUP = 20
BUSY = 0.15  # share of the machine used by others above which a phase is flagged


@dataclass(frozen=True)
class Pair:
    direct: LoadResult
    target: LoadResult


@dataclass
class TargetReport:
    name: str
    kind: str  # "direct", "switchboard" or "litellm"
    db: str | None
    workers: int
    startup_s: float | None = None
    pairs: list[Pair] = field(default_factory=list)
    ttfb_direct: Ttfb | None = None
    ttfb_target: Ttfb | None = None
    rss_total: int = 0
    rss_workers: list[int] = field(default_factory=list)
    rss_rest: int = 0  # supervisor and helper processes
    usage_records: int | None = None
    client_calls: int = 0  # every call the benchmark completed against the target, warm-ups included
    cut_off: int = 0  # at most this many more were in flight when a wrk run stopped (one per connection)
    notes: list[str] = field(default_factory=list)

    def pair(self, mode: Mode, concurrency: int) -> Pair | None:
        return next(
            (p for p in self.pairs if p.target.mode == mode and p.target.concurrency == concurrency), None
        )

    @property
    def calls(self) -> int:
        return sum(p.target.requests for p in self.pairs)


def say(text: str) -> None:
    print(text, flush=True)


def _line(label: str, r: LoadResult) -> str:
    flag = f"  BUSY: others used {r.other_load:.0%} of the machine" if r.other_load > BUSY else ""
    errors = f", errors {r.errors.status} status + {r.errors.socket} socket" if r.errors.total else ""
    db = f" + db {r.db_cpu_ms_per_call:.3f}" if r.db_cpu_seconds else ""
    return (
        f"    {label:<26} {r.rps:9.0f} req/s  p50 {r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  "
        f"cpu {r.cpu_ms_per_call:6.3f}{db} ms/call{errors}{flag}"
    )


def measure(opts: Options, direct: Target, target: Target, report: TargetReport) -> None:
    for mode in MODES:
        check_answers(direct.endpoint(mode), stream=mode == "stream")
        check_answers(target.endpoint(mode), stream=mode == "stream")
    for mode in MODES:  # warm caches and connection pools; not recorded
        report.client_calls += 1 + run_wrk(opts.work, target, mode, 16, opts.warmup_seconds, True).requests
        report.cut_off += 16
    for mode in MODES:
        for concurrency in opts.concurrency:
            one, _, _ = load_average()
            say(f"  {mode} c={concurrency} (load average {one:.2f})")
            d = run_wrk(opts.work, direct, mode, concurrency, opts.seconds)
            say(_line("direct", d))
            t = run_wrk(opts.work, target, mode, concurrency, opts.seconds)
            say(_line(target.name, t))
            report.pairs.append(Pair(d, t))
            report.client_calls += t.requests
            report.cut_off += concurrency
            if t.other_load > BUSY or d.other_load > BUSY:
                report.notes.append(f"{mode} c={concurrency}: the machine was busy with other work")
    report.rss_total, _ = proctree.rss_bytes(target.pid)
    report.rss_workers, report.rss_rest = proctree.worker_rss(target.pid, target.workers)
    report.ttfb_direct = time_to_first_byte(direct.stream, opts.ttfb_samples, TTFB_WARMUP)
    report.ttfb_target = time_to_first_byte(target.stream, opts.ttfb_samples, TTFB_WARMUP)
    report.client_calls += report.ttfb_target.samples + TTFB_WARMUP
    say(
        f"  time to first streamed byte, c=1: direct {report.ttfb_direct.p50_ms:.2f} ms, "
        f"{target.name} {report.ttfb_target.p50_ms:.2f} ms (p50 of {report.ttfb_target.samples})"
    )
    workers = " + ".join(f"{b / 2**20:.0f}" for b in report.rss_workers)
    say(
        f"  resident memory after load: {report.rss_total / 2**20:.0f} MiB (workers {workers} MiB, "
        f"supervisor and helpers {report.rss_rest / 2**20:.0f} MiB)"
    )
    sys.stdout.flush()
