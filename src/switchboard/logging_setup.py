"""Configures logging once at start: plain text or one JSON object per line, written in batches.

The access log writes a line per request. Written and flushed one by one, that is a `write` syscall
per request on the hot path; here lines are gathered and written together at most FLUSH_SECONDS
later (as nginx's `access_log ... buffer=` does). A warning or error is written at once, with
everything gathered before it, so that nothing is reordered and trouble is never late. A process
killed outright can lose at most the last FLUSH_SECONDS of INFO lines.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import sys
import threading
import time
import weakref
from typing import Any, TextIO

import orjson

from switchboard.observability.request import RequestIdFilter

FLUSH_SECONDS = 0.2
MAX_BUFFERED_CHARS = 64 * 1024


class _CachedTimeFormatter(logging.Formatter):
    """formatTime renders the date once per second, not once per line."""

    def __init__(self, fmt: str | None = None) -> None:
        super().__init__(fmt)
        self._stamps: dict[str, tuple[int, str]] = {}

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        pattern = datefmt or self.default_time_format
        second = int(record.created)
        cached = self._stamps.get(pattern)
        if cached is None or cached[0] != second:
            cached = self._stamps[pattern] = (second, time.strftime(pattern, self.converter(record.created)))
        if datefmt is not None:
            return cached[1]
        return f"{cached[1]},{int(record.msecs):03d}"


class _TextFormatter(_CachedTimeFormatter):
    """A record written during a request ends its first line with the request's id."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        text = super().formatMessage(record)
        request_id = getattr(record, "request_id", None)
        if request_id and getattr(record, "fields", None) is None:  # the access line names it already
            return f"{text} rid={request_id}"
        return text


class JsonFormatter(logging.Formatter):
    """One object per line; `ts` is RFC 3339 in UTC with milliseconds (`2025-01-31T12:00:00.123+00:00`)."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._stamp = ""

    def _ts(self, created: float) -> str:
        second = int(created)
        if second != self._second:  # the date is rendered once per second, not once per line
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((created - second) * 1000):03d}+00:00"

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": self._ts(record.created),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            payload.update(fields)
        else:
            payload["message"] = record.getMessage()
            request_id = getattr(record, "request_id", None)
            if request_id:
                payload["request_id"] = request_id
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(payload, default=str).decode()


class BatchingStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A StreamHandler whose INFO and DEBUG lines reach the stream in batches (see the module doc)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._pending: list[str] = []
        self._pending_chars = 0
        with _LIVE_LOCK:
            _LIVE.add(self)
        _Flusher.ensure_running()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:
            self.handleError(record)
            return
        # emit runs under the handler's lock (Handler.handle), as flush does.
        self._pending.append(line)
        self._pending_chars += len(line)
        if record.levelno >= logging.WARNING or self._pending_chars >= MAX_BUFFERED_CHARS:
            self._write_pending()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._pending_chars = 0
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stderr must not take a request down with it

    def setStream(self, stream: TextIO) -> TextIO | None:  # type: ignore[override]
        self.flush()
        return super().setStream(stream)

    def close(self) -> None:
        # Still flushed in the background afterwards: logging.config (uvicorn configures it at start)
        # closes every handler, yet a closed StreamHandler goes on writing, and so must this one.
        self.flush()
        super().close()


_LIVE: weakref.WeakSet[BatchingStreamHandler] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


class _Flusher:
    """One daemon thread per process flushes every live handler every FLUSH_SECONDS."""

    _thread: threading.Thread | None = None
    _guard = threading.Lock()

    @classmethod
    def ensure_running(cls) -> None:
        with cls._guard:
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(target=cls._run, name="log-flusher", daemon=True)
                cls._thread.start()

    @staticmethod
    def _run() -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            flush_all()


def flush_all() -> None:
    with _LIVE_LOCK:
        handlers = list(_LIVE)
    for handler in handlers:
        # The flusher thread must outlive any one stream's trouble; there is nowhere to report it.
        with contextlib.suppress(Exception):
            handler.flush()


atexit.register(flush_all)


class _Held(logging.Handler):
    """Keeps what is logged before logging is configured (a warning while settings load), so that
    it is written in the configured format (JSON stays JSON) once configure_logging runs."""

    LIMIT = 1000

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.records) < self.LIMIT:
            self.records.append(record)


def hold_early_records() -> None:
    """Until configure_logging, the `switchboard` loggers' records are held rather than printed bare."""
    root = logging.getLogger("switchboard")
    if not root.handlers:
        root.addHandler(_Held())
        root.setLevel(logging.INFO)
        atexit.register(_release_held)


def _release_held() -> None:
    """A process that stopped before configuring logging (settings refused) still shows its warnings."""
    for handler in logging.getLogger("switchboard").handlers:
        if isinstance(handler, _Held):
            for record in handler.records:
                if record.levelno >= logging.WARNING:
                    sys.stderr.write(f"{record.levelname} {record.name} {record.getMessage()}\n")
            handler.records.clear()


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    # No format here shows a thread or process; LogRecord then skips looking them up (logging's
    # documented optimisation flags), once per access line.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = BatchingStreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(_TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("switchboard")
    held: list[logging.LogRecord] = []
    for previous in root.handlers:
        if isinstance(previous, BatchingStreamHandler):
            previous.close()
        if isinstance(previous, _Held):
            held = previous.records
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
    for record in held:
        if record.levelno >= root.getEffectiveLevel():
            handler.handle(record)
    # uvicorn's own lines (serving/supervisor.py leaves its logging to us) in the same format.
    server = logging.getLogger("uvicorn")
    server.handlers[:] = [handler]
    server.propagate = False
