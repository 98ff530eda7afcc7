"""Metrics summed over the workers of one server (`switchboard serve --workers N`).

prometheus_client's multiprocess mode: each worker writes its values to files of its own in
PROMETHEUS_MULTIPROC_DIR and a scrape, on whichever worker, adds up every file. The directory is made
fresh for each server before its workers start (a reused one would carry an old server's counts) and
removed when it stops. A worker that dies keeps its counts (counters never go back) but its gauges
(streams in flight, queue depth) are dropped, as `livesum` gauges are for dead processes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client.multiprocess import mark_process_dead
from uvicorn.supervisors import Multiprocess

DIRECTORY_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def shared_metrics() -> Iterator[str]:
    """A private directory for this server's workers' metrics, named to them in the environment."""
    directory = tempfile.mkdtemp(prefix="switchboard-metrics-")
    os.environ[DIRECTORY_VARIABLE] = directory  # the workers inherit it; they start after this
    try:
        yield directory
    finally:
        os.environ.pop(DIRECTORY_VARIABLE, None)
        shutil.rmtree(directory, ignore_errors=True)


def shared_directory() -> Path | None:
    """This server's private directory when it runs several workers (other per-server state shared
    by the workers lives there too: routing's calls in flight)."""
    directory = os.environ.get(DIRECTORY_VARIABLE)
    return Path(directory) if directory else None


class MetricsMultiprocess(Multiprocess):
    """uvicorn's supervisor, telling the metrics when a worker it replaced has gone."""

    def keep_subprocess_alive(self) -> None:
        before = self._pids()
        super().keep_subprocess_alive()
        self._forget(before)

    def restart_all(self) -> None:
        before = self._pids()
        super().restart_all()
        self._forget(before)

    def _pids(self) -> set[int]:
        return {process.pid for process in self.processes if process.pid is not None}

    def _forget(self, before: set[int]) -> None:
        for pid in before - self._pids():
            mark_process_dead(pid)  # type: ignore[no-untyped-call]
