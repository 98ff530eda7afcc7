"""CPU time and resident memory of a whole process tree, read from /proc."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.machine import CLK_TCK

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    ticks: int  # utime + stime + cutime + cstime: reaped children stay counted in their parent
    rss_bytes: int
    comm: str


def _read_stat(pid: int) -> ProcStat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # the process ended between listing and reading
        return None
    # comm may contain spaces and parentheses; the fields after the last ')' are fixed.
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    rest = raw[raw.rindex(")") + 2 :].split()
    ppid = int(rest[1])
    utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
    rss_pages = int(rest[21])
    return ProcStat(pid, ppid, utime + stime + cutime + cstime, rss_pages * PAGE_SIZE, comm)


def tree(root: int) -> list[ProcStat]:
    """The root process and all its descendants that are alive now."""
    stats = [s for s in (_read_stat(int(p)) for p in os.listdir("/proc") if p.isdigit()) if s]
    children: dict[int, list[ProcStat]] = {}
    by_pid = {s.pid: s for s in stats}
    for s in stats:
        children.setdefault(s.ppid, []).append(s)
    if root not in by_pid:
        return []
    found, queue = [], [by_pid[root]]
    while queue:
        current = queue.pop()
        found.append(current)
        queue.extend(children.get(current.pid, []))
    return found


def cpu_seconds(root: int) -> float:
    return sum(s.ticks for s in tree(root)) / CLK_TCK


def rss_bytes(root: int) -> tuple[int, list[int]]:
    """Total RSS of the tree and each process's RSS (largest first)."""
    sizes = sorted((s.rss_bytes for s in tree(root)), reverse=True)
    return sum(sizes), sizes


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def worker_rss(root: int, workers: int) -> tuple[list[int], int]:
    """RSS of each worker process and of the rest of the tree (supervisor, helpers).

    With one worker, uvicorn serves in the root process; with more, the root supervises
    `multiprocessing` spawned children.
    """
    stats = tree(root)
    if workers == 1:
        return [s.rss_bytes for s in stats if s.pid == root], sum(s.rss_bytes for s in stats if s.pid != root)
    is_worker = {s.pid: "spawn_main" in cmdline(s.pid) for s in stats}
    return (
        sorted((s.rss_bytes for s in stats if is_worker[s.pid]), reverse=True),
        sum(s.rss_bytes for s in stats if not is_worker[s.pid]),
    )


def ticks_matching(marker: str) -> dict[int, int]:
    """CPU ticks of each process whose command line holds `marker` (PostgreSQL backends of one database)."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and marker in cmdline(int(name)):
            stat = _read_stat(int(name))
            if stat:
                found[stat.pid] = stat.ticks
    return found


def seconds_since(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU used between two `ticks_matching` samples by the processes alive at the second one.

    A backend that ended in between takes its ticks with it, so this is a lower bound.
    """
    return sum(ticks - before.get(pid, 0) for pid, ticks in after.items()) / CLK_TCK
