"""Counters the worker processes of one server add up: each process writes only its own row of a
table in a shared memory-mapped file, and any process reads a column's sum.

One writer per cell, so no lock is taken on the hot path: a worker's increments are plain stores to
its own row. A row is claimed with a byte-range lock on the file that the kernel drops when its
process dies, so a replacement worker takes the dead one's row over and clears what it left counted.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import zlib
from collections.abc import Hashable
from pathlib import Path

ROWS = 64  # workers of one server at most; a worker beyond them has no row (`claimed` is False)
SLOTS = 4096  # keys share a slot when their hashes collide: they then read as equally busy
_CELL = 4  # a signed 32-bit count


def slot_of(key: Hashable) -> int:
    """A slot every process computes alike (Python's own `hash` of a str differs per process)."""
    return zlib.crc32(repr(key).encode()) % SLOTS


class WorkerCounters:
    """This process's row of the table at `path`; `total` adds up every row's count of a key."""

    __slots__ = ("_cells", "_fd", "_map", "_row")

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        size = ROWS * SLOTS * _CELL
        if os.fstat(self._fd).st_size < size:
            os.ftruncate(self._fd, size)  # sparse: untouched rows take no memory
        self._row = self._claim_row()
        self._map = mmap.mmap(self._fd, size)
        self._cells = memoryview(self._map).cast("i")
        if self._row is not None:
            self._clear(self._row)  # what a dead worker left counted

    def _clear(self, row: int) -> None:
        self._cells[row * SLOTS : (row + 1) * SLOTS] = memoryview(bytes(SLOTS * _CELL)).cast("i")

    def _claim_row(self) -> int | None:
        for row in range(ROWS):
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, row)
            except OSError:
                continue  # a live worker holds it
            return row
        return None

    @property
    def claimed(self) -> bool:
        return self._row is not None

    def add(self, key: Hashable, delta: int) -> None:
        if self._row is not None:
            self._cells[self._row * SLOTS + slot_of(key)] += delta

    def total(self, key: Hashable) -> int:
        return sum(self._cells[slot_of(key) :: SLOTS])

    def close(self) -> None:
        """Gives the row up (cleared: this process's calls are over); later calls count nothing."""
        if self._row is not None:
            self._clear(self._row)
            self._row = None
        if self._fd >= 0:
            os.close(self._fd)  # drops the row's lock; the mapping stays readable
            self._fd = -1
