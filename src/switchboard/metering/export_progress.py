"""What a long `usage export` shows on stderr: a live count at a terminal, and one summary line."""

from __future__ import annotations

import sys
import time
from typing import TextIO

REDRAW_SECONDS = 0.5


class ExportProgress:
    """Counts exported records from the bytes written (one line each; CSV's header is not one)."""

    def __init__(self, fmt: str, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._live = self._stream.isatty()
        self._lines = -1 if fmt == "csv" else 0
        self._started = time.monotonic()
        self._drawn = self._started

    @property
    def records(self) -> int:
        return max(self._lines, 0)

    def add(self, chunk: bytes) -> None:
        self._lines += chunk.count(b"\n")
        if self._live:
            now = time.monotonic()
            if now - self._drawn >= REDRAW_SECONDS:
                self._drawn = now
                rate = self.records / max(now - self._started, 1e-9)
                self._stream.write(f"\r{self.records:,} records ({rate:,.0f}/s)")
                self._stream.flush()

    def finish(self, destination: str) -> None:
        elapsed = time.monotonic() - self._started
        clear = "\r\033[K" if self._live else ""
        self._stream.write(
            f"{clear}switchboard: exported {self.records:,} records to {destination} in {elapsed:.1f} s\n"
        )
        self._stream.flush()
