"""The results as markdown: per-call costs with budgets, the load table, and the machine."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench import budgets
from bench.load import LoadResult
from bench.machine import MachineInfo
from bench.measure import TargetReport

MIB = 2**20


@dataclass(frozen=True)
class RunInfo:
    started: str  # ISO date and time, UTC
    machine: MachineInfo
    load_at_start: tuple[float, float, float]
    max_other_load: float
    git_sha: str
    phase_seconds: int
    ttfb_samples: int
    quick: bool
    upstream_startup_s: float
    upstream_rss: int


def _ms(value: float | None, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:+.2f} ms" if signed else f"{value:.2f} ms"


def _ratio(a: float, b: float) -> str:
    if not b > 0 or math.isnan(a):
        return "-"
    r = a / b
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x" if r >= 1 else f"{r:.2g}x"


def _cell(check: budgets.Check, text: str) -> str:
    return f"{text} {check.verdict()}" if check.measured is not None else text


def _cost_rows(reports: Sequence[TargetReport], info: RunInfo) -> list[str]:
    rows = [
        "| target | CPU / non-streamed call | CPU / streamed call | added p50, c=1 | added TTFB, c=1 "
        "| start → first call | RSS after load | errors at top c |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        b_cj, b_cs, b_p50, b_ttfb, b_start, b_rss, b_err = budgets.checks(r)
        cj, cs = budgets.worst_cpu_ms(r, "json"), budgets.worst_cpu_ms(r, "stream")
        dj = max((p.direct.cpu_ms_per_call for p in r.pairs if p.direct.mode == "json"), default=math.nan)
        ds = max((p.direct.cpu_ms_per_call for p in r.pairs if p.direct.mode == "stream"), default=math.nan)
        ttfb = budgets.added_ttfb_ms(r)
        ttfb_text = _ms(ttfb, signed=True)
        if r.ttfb_target and r.ttfb_direct:
            ttfb_text += f" ({r.ttfb_target.p50_ms:.2f} vs {r.ttfb_direct.p50_ms:.2f})"
        pair = r.pair("json", 1)
        p50_text = _ms(budgets.added_p50_ms(r), signed=True)
        if pair:
            p50_text += f" ({pair.target.p50_ms:.2f} vs {pair.direct.p50_ms:.2f})"
        start = f"{r.startup_s:.2f} s (nginx {info.upstream_startup_s:.2f} s)" if r.startup_s else "-"
        workers = " + ".join(f"{b / MIB:.0f}" for b in r.rss_workers)
        rest = f" + {r.rss_rest / MIB:.0f} supervisor" if r.rss_rest else ""
        total = f" = {r.rss_total / MIB:.0f}" if len(r.rss_workers) > 1 or r.rss_rest else ""
        rss = f"{workers}{rest}{total} MiB (nginx {info.upstream_rss / MIB:.0f} MiB)"
        errors = budgets.errors_at_top(r)
        rows.append(
            "| "
            + " | ".join(
                [
                    r.name,
                    _cell(b_cj, f"{_ms(cj)} ({_ratio(cj or 0, dj)} nginx)"),
                    _cell(b_cs, f"{_ms(cs)} ({_ratio(cs or 0, ds)} nginx)"),
                    _cell(b_p50, p50_text),
                    _cell(b_ttfb, ttfb_text),
                    _cell(b_start, start),
                    _cell(b_rss, rss),
                    _cell(b_err, "-" if errors is None else f"{errors:.0f}"),
                ]
            )
            + " |"
        )
    return rows


def _load_row(name: str, d: LoadResult, t: LoadResult) -> str:
    errors = f"{t.errors.status} + {t.errors.socket}" if t.errors.total else "0"
    db = f"{t.db_cpu_ms_per_call:.3f}" if t.db_cpu_seconds else "-"
    return (
        f"| {name} | {t.mode} | {t.concurrency} | {t.rps:.0f} | {d.rps:.0f} | {_ratio(t.rps, d.rps)} "
        f"| {t.p50_ms:.2f} | {d.p50_ms:.2f} | {t.p50_ms - d.p50_ms:+.2f} | {t.p99_ms:.2f} | {d.p99_ms:.2f} "
        f"| {errors} | {t.cpu_ms_per_call:.3f} | {db} "
        f"| {d.cpu_ms_per_call:.3f} "
        f"| {max(t.other_load, d.other_load):.0%} |"
    )


def markdown(reports: Sequence[TargetReport], info: RunInfo) -> str:
    m = info.machine
    one, five, fifteen = info.load_at_start
    busy = info.max_other_load > 0.15 or one > 0.5
    lines = [
        f"# Switchboard benchmark, {info.started}",
        "",
        f"- Machine: {m.describe()}, Python {m.python}.",
        f"- Commit {info.git_sha}; {'quick smoke run' if info.quick else 'full run'}: "
        f"{info.phase_seconds} s per load phase, {info.ttfb_samples} timed streamed calls for TTFB.",
        f"- Load average at start {one:.2f} / {five:.2f} / {fifteen:.2f}; other processes used up to "
        f"{info.max_other_load:.0%} of the machine during a phase.",
        "- Upstream: nginx on loopback with fixed answers; load: wrk, one thread, keep-alive connections.",
    ]
    if busy:
        lines.append(
            "- **Measured on a shared, busy machine: latency and throughput are noisy; CPU per call "
            "is the steadiest figure.**"
        )
    lines += ["", "## Per relayed call, beside the direct call to nginx", ""]
    lines += _cost_rows(reports, info)
    lines += [
        "",
        "CPU is user+system time of the gateway's whole process tree per call, the worst of the "
        "concurrencies measured; nginx's own CPU per call is the reference. Added latency is the "
        "gateway's p50 minus the direct p50, measured back to back. On PostgreSQL the database server's "
        "own CPU is not in the gateway's figure; the load table shows it separately (SQLite runs inside "
        "the gateway process and is included).",
        "",
        "## Load",
        "",
        "| target | mode | c | req/s | direct req/s | ratio | p50 ms | direct p50 | added p50 | p99 ms "
        "| direct p99 | errors (status + socket) | CPU ms/call | DB server CPU ms/call | nginx CPU ms/call "
        "| others' load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        lines += [_load_row(r.name, p.direct, p.target) for p in r.pairs]
    lines += ["", "## Budgets (issue 8)", ""]
    for r in reports:
        if r.kind != "switchboard":
            continue
        lines += [f"- {r.name}: {check.describe()}" for check in budgets.checks(r)]
    notes = [f"- {r.name}: {note}" for r in reports for note in r.notes]
    if notes:
        lines += ["", "## Notes", "", *notes]
    return "\n".join(lines) + "\n"
