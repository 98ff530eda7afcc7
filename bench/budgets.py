"""Issue 8's budgets, checked against one measured target."""

from __future__ import annotations

from dataclasses import dataclass

from bench.measure import TargetReport
from bench.target import Mode

MIB = 2**20


@dataclass(frozen=True)
class Check:
    name: str
    measured: float | None  # None: not measured in this run
    limit: float
    unit: str

    @property
    def passed(self) -> bool:
        return self.measured is not None and self.measured <= self.limit

    def verdict(self) -> str:
        if self.measured is None:
            return "SKIP"
        return "PASS" if self.passed else "FAIL"

    def describe(self) -> str:
        value = "not measured" if self.measured is None else f"{self.measured:.3g} {self.unit}"
        return f"{self.verdict()}  {self.name}: {value} (budget ≤ {self.limit:g} {self.unit})"


def worst_cpu_ms(report: TargetReport, mode: Mode) -> float | None:
    values = [p.target.cpu_ms_per_call for p in report.pairs if p.target.mode == mode]
    return max(values) if values else None


def added_p50_ms(report: TargetReport, mode: Mode = "json") -> float | None:
    pair = report.pair(mode, 1)
    return pair.target.p50_ms - pair.direct.p50_ms if pair else None


def added_ttfb_ms(report: TargetReport) -> float | None:
    if report.ttfb_target is None or report.ttfb_direct is None:
        return None
    return report.ttfb_target.p50_ms - report.ttfb_direct.p50_ms


def errors_at_top(report: TargetReport) -> float | None:
    if not report.pairs:
        return None
    top = max(p.target.concurrency for p in report.pairs)
    return float(sum(p.target.errors.total for p in report.pairs if p.target.concurrency == top))


def rss_per_worker_mib(report: TargetReport) -> float | None:
    """The largest worker; the supervisor of several workers is shown beside it, not counted."""
    return max(report.rss_workers) / MIB if report.rss_workers else None


def checks(report: TargetReport) -> list[Check]:
    top = max((p.target.concurrency for p in report.pairs), default=64)
    return [
        Check("gateway CPU per non-streamed call (worst c)", worst_cpu_ms(report, "json"), 1.0, "ms"),
        Check("gateway CPU per 22-event streamed call (worst c)", worst_cpu_ms(report, "stream"), 1.5, "ms"),
        Check("added p50 latency, non-streamed, c=1", added_p50_ms(report), 1.0, "ms"),
        Check("added time to first streamed byte, c=1", added_ttfb_ms(report), 1.0, "ms"),
        Check("start to first answered call", report.startup_s, 2.0, "s"),
        Check("resident memory after load, largest worker", rss_per_worker_mib(report), 150, "MiB"),
        Check(f"errors at concurrency {top}", errors_at_top(report), 0, "errors"),
    ]
