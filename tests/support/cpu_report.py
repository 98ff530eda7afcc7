"""Opt-in CPU accounting per test group: `SWITCHBOARD_TEST_CPU_REPORT=DIR` writes one JSON file a
pytest process into DIR (`python -m tests.support.cpu_report DIR` sums them up).

Per group (the groups of tests/support/scheduling.py): CPU seconds of the test process (user+sys,
RUSAGE_SELF) and of its ended subprocesses (RUSAGE_CHILDREN), wall seconds, and the process's open
file descriptors after the group's last test. A wall figure moves with the machine's load; CPU
seconds much less, so they are the figures to compare runs by.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scheduling import group_of

ENV = "SWITCHBOARD_TEST_CPU_REPORT"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else -1


class CpuReport:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.groups: dict[str, dict[str, float]] = {}
        self.started = time.monotonic()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        own, children, wall = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.monotonic()
        yield
        group = self.groups.setdefault(
            group_of(item), {"tests": 0, "self": 0.0, "children": 0.0, "wall": 0.0, "fds": 0}
        )
        group["tests"] += 1
        group["self"] += _cpu(resource.RUSAGE_SELF) - own
        group["children"] += _cpu(resource.RUSAGE_CHILDREN) - children
        group["wall"] += time.monotonic() - wall
        group["fds"] = _open_files()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        database = os.environ.get("SWITCHBOARD_TEST_DB", "sqlite")
        report: dict[str, Any] = {
            "database": database,
            "worker": worker,
            "wall": time.monotonic() - self.started,
            # The whole process's, its start and collection included.
            "self": _cpu(resource.RUSAGE_SELF),
            "children": _cpu(resource.RUSAGE_CHILDREN),
            "open_files": _open_files(),
            "groups": self.groups,
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{database}-{worker}-{os.getpid()}.json"
        path.write_text(json.dumps(report, indent=1), encoding="utf-8")


def register(config: pytest.Config) -> None:
    """Called from the suite's conftest: on only when the variable names a directory."""
    directory = os.environ.get(ENV)
    # Not xdist's controller: its children are the workers, whose own reports count them.
    controller = bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")
    if directory and not controller:
        config.pluginmanager.register(CpuReport(Path(directory)), "switchboard-cpu-report")


def summarize(directory: Path, top: int = 40) -> str:
    """The reports in `directory`, per database: totals, then the groups by CPU (self + children)."""
    lines: list[str] = []
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.json"))]
    for database in sorted({report["database"] for report in reports}):
        mine = [report for report in reports if report["database"] == database]
        groups: dict[str, dict[str, float]] = {}
        for report in mine:
            groups.update(report["groups"])
        own = sum(report["self"] for report in mine)
        children = sum(report["children"] for report in mine)
        walls = ", ".join(f"{r['worker']} {r['wall']:.0f} s wall, {r['open_files']} files open" for r in mine)
        lines.append(f"== {database}: {own:.0f} s CPU in tests + {children:.0f} s in subprocesses ({walls})")
        ranked = sorted(groups.items(), key=lambda kv: kv[1]["self"] + kv[1]["children"], reverse=True)
        for name, group in ranked[:top]:
            lines.append(
                f"{group['self'] + group['children']:7.1f} cpu {group['self']:6.1f} self "
                f"{group['children']:6.1f} children {group['wall']:6.1f} wall {int(group['tests']):4d} tests "
                f"{int(group['fds']):5d} fds  {name}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
