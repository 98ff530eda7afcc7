"""`usage export` progress: a live count and rate at a terminal, one summary line always."""

from __future__ import annotations

import io
import re

import pytest

from switchboard.metering import export_progress
from switchboard.metering.export_progress import ExportProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_the_count_grow_and_a_summary_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_progress, "REDRAW_SECONDS", 0.0)  # redraw on every chunk
    screen = Terminal()
    progress = ExportProgress("csv", screen)
    progress.add(b"id,cost\n1,2\n")  # the header is not a record
    progress.add(b"2,3\n3,4\n")
    progress.finish("jan.csv")
    shown = screen.getvalue()
    assert "\r1 records (" in shown and "\r3 records (" in shown and "/s)" in shown
    assert re.search(r"\r\x1b\[Kswitchboard: exported 3 records to jan\.csv in \d+\.\d s\n$", shown)


def test_a_pipe_gets_only_the_summary_line() -> None:
    log = io.StringIO()
    progress = ExportProgress("ndjson", log)
    for _ in range(1500):
        progress.add(b'{"id": 1}\n')
    progress.finish("standard output")
    assert log.getvalue().startswith("switchboard: exported 1,500 records to standard output in ")
    assert "\r" not in log.getvalue() and log.getvalue().count("\n") == 1
