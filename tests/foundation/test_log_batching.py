"""Log lines reach stderr in batches (logging_setup.py): late by at most a moment, never lost or reordered."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator

import pytest

from switchboard.logging_setup import (
    FLUSH_SECONDS,
    BatchingStreamHandler,
    JsonFormatter,
    _CachedTimeFormatter,
)


class CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, CountingStream, BatchingStreamHandler]]:
    stream = CountingStream()
    handler = BatchingStreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log = logging.getLogger(f"test.batching.{id(stream)}")
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    yield log, stream, handler
    handler.close()


def test_many_info_lines_take_few_writes(
    logger: tuple[logging.Logger, CountingStream, BatchingStreamHandler],
) -> None:
    log, stream, handler = logger
    for n in range(200):
        log.info("request %d", n)
    handler.flush()
    assert stream.getvalue().splitlines() == [f"INFO request {n}" for n in range(200)]
    assert stream.writes <= 5


def test_a_warning_is_written_at_once_after_what_came_before(
    logger: tuple[logging.Logger, CountingStream, BatchingStreamHandler],
) -> None:
    log, stream, _ = logger
    log.info("first")
    log.info("second")
    log.warning("trouble")
    assert stream.getvalue().splitlines() == ["INFO first", "INFO second", "WARNING trouble"]


def test_info_lines_arrive_shortly_without_further_logging(
    logger: tuple[logging.Logger, CountingStream, BatchingStreamHandler],
) -> None:
    log, stream, _ = logger
    log.info("lonely line")
    deadline = time.monotonic() + FLUSH_SECONDS * 10
    while "lonely line" not in stream.getvalue():
        assert time.monotonic() < deadline, "the line was never written"
        time.sleep(0.01)


def test_closing_the_handler_writes_what_is_pending(
    logger: tuple[logging.Logger, CountingStream, BatchingStreamHandler],
) -> None:
    log, stream, handler = logger
    handler.acquire()  # holds the background flusher off until close
    try:
        log.info("last words")
    finally:
        handler.release()
    handler.close()
    assert "INFO last words" in stream.getvalue()


@pytest.mark.parametrize(
    "created", [0.0, 1_767_225_599.999, 1_767_225_600.0, 1_767_225_600.5, 1_800_000_000.123]
)
def test_cached_timestamps_equal_the_standard_formatters(created: float) -> None:
    standard = logging.Formatter("%(asctime)s %(message)s")
    cached = _CachedTimeFormatter("%(asctime)s %(message)s")
    warm = logging.makeLogRecord({"msg": "warm", "created": created - 1, "msecs": 0.0})
    cached.format(warm)  # a stale cached second must not leak into the next line
    record = logging.makeLogRecord({"msg": "m", "created": created, "msecs": (created - int(created)) * 1000})
    assert cached.format(record) == standard.format(record)


def test_json_lines_carry_an_rfc3339_timestamp_with_milliseconds() -> None:
    record = logging.makeLogRecord({"msg": "m", "created": 1_800_000_000.5, "levelname": "INFO", "name": "x"})
    line = JsonFormatter().format(record)
    expected = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_800_000_000)) + ".500+00:00"
    assert f'"ts":"{expected}"' in line


def test_lines_logged_after_close_still_arrive(
    logger: tuple[logging.Logger, CountingStream, BatchingStreamHandler],
) -> None:
    """logging.config, which uvicorn runs at start, closes every handler; they stay attached and in use."""
    log, stream, handler = logger
    handler.close()
    log.info("after close")
    deadline = time.monotonic() + FLUSH_SECONDS * 10
    while "after close" not in stream.getvalue():
        assert time.monotonic() < deadline, "the line was never written"
        time.sleep(0.01)
