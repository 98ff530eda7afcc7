"""Counters shared by the worker processes of one server (kit/worker_counters.py)."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from multiprocessing.connection import Connection
from pathlib import Path

from switchboard.kit.worker_counters import WorkerCounters


def _worker(path: Path, key: uuid.UUID, count: int, pipe: Connection) -> None:
    counters = WorkerCounters(path)
    for _ in range(count):
        counters.add(key, 1)
    pipe.send("counted")
    pipe.recv()  # hold the row until told to die
    os._exit(0)  # dies without giving its row up, as a killed worker does


def test_every_live_worker_counts_and_a_dead_workers_row_is_cleared_by_its_replacement(
    tmp_path: Path,
) -> None:
    path, key = tmp_path / "in-flight.bin", uuid.uuid4()
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    other = spawn.Process(target=_worker, args=(path, key, 3, theirs))
    other.start()
    assert ours.poll(30) and ours.recv() == "counted"
    here = WorkerCounters(path)
    here.add(key, 1)
    assert here.total(key) == 4  # the other worker's three and this one's
    assert here.total(uuid.uuid4()) == 0
    ours.send("die")
    other.join(30)
    replacement = WorkerCounters(path)  # takes the dead worker's row over
    assert replacement.total(key) == 1
    here.add(key, -1)
    assert replacement.total(key) == 0
    replacement.close()
    here.close()
    here.add(key, 1)  # after close: counts nothing, raises nothing
    assert WorkerCounters(path).total(key) == 0
