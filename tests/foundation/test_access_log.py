"""One log line per request (request id, status, duration) in text or JSON; never the token or the body."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.gateway import Gateway
from tests.support.probe import ProbeFactory, unique_name

BODY_MARKER = "body-marker-must-not-be-logged"
QUERY_MARKER = "query-marker-must-not-be-logged"


@contextmanager
def captured_log() -> Iterator[io.StringIO]:
    """Redirect the handler the last `create_app` configured, keeping its formatter; then put it back."""
    buffer = io.StringIO()
    logger = logging.getLogger("switchboard")
    handler = logger.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    previous = handler.setStream(buffer)
    try:
        yield buffer
    finally:
        handler.setStream(previous)
        logger.setLevel(logging.WARNING)


def _exchange(gateway: Gateway, request_id: str) -> str:
    user = gateway.user()
    response = user.client.post(
        f"/probe/items?note={QUERY_MARKER}",
        json={"name": unique_name(), "count": 1, "note": BODY_MARKER},
        headers={"x-request-id": request_id},
    )
    assert response.status_code == 201
    return user.token


def _lines(buffer: io.StringIO, request_id: str) -> list[str]:
    deadline = time.monotonic() + 5
    while True:
        lines = [line for line in buffer.getvalue().splitlines() if request_id in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def test_the_text_log_has_one_line_per_request_without_secrets(make_probe_gateway: ProbeFactory) -> None:
    gateway = make_probe_gateway(env={"SWITCHBOARD_LOG_LEVEL": "INFO", "SWITCHBOARD_LOG_FORMAT": "text"})
    with captured_log() as buffer:
        token = _exchange(gateway, "text-log-1")
        lines = _lines(buffer, "text-log-1")
    assert len(lines) == 1
    assert " POST /probe/items 201 " in lines[0]
    assert "rid=text-log-1" in lines[0]
    assert lines[0].rstrip().split()[-2].endswith("ms")
    everything = buffer.getvalue()
    assert token not in everything and token[:20] not in everything
    assert BODY_MARKER not in everything and QUERY_MARKER not in everything


def test_the_json_log_has_one_object_per_request_without_secrets(make_probe_gateway: ProbeFactory) -> None:
    gateway = make_probe_gateway(env={"SWITCHBOARD_LOG_LEVEL": "INFO", "SWITCHBOARD_LOG_FORMAT": "json"})
    with captured_log() as buffer:
        token = _exchange(gateway, "json-log-1")
        lines = _lines(buffer, "json-log-1")
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["request_id"] == "json-log-1"
    assert record["method"] == "POST" and record["path"] == "/probe/items"
    assert record["status"] == 201
    assert isinstance(record["latency_ms"], int | float) and record["latency_ms"] >= 0
    assert record["level"] == "INFO" and record["logger"] == "switchboard.access"
    everything = buffer.getvalue()
    assert token not in everything
    assert BODY_MARKER not in everything and QUERY_MARKER not in everything
    assert all(json.loads(line) for line in everything.splitlines())


def test_a_crash_is_logged_with_its_request_id_and_status_500(make_probe_gateway: ProbeFactory) -> None:
    gateway = make_probe_gateway(env={"SWITCHBOARD_LOG_LEVEL": "INFO", "SWITCHBOARD_LOG_FORMAT": "json"})
    with captured_log() as buffer:
        response = gateway.user().client.post(
            "/probe/crash", json={"name": unique_name()}, headers={"x-request-id": "crash-log-1"}
        )
        lines = _lines(buffer, "crash-log-1")
        deadline = time.monotonic() + 5
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
            lines = _lines(buffer, "crash-log-1")
    assert response.status_code == 500
    records = [json.loads(line) for line in lines]
    assert any(r.get("status") == 500 for r in records)
    assert any("Traceback" in r.get("exc", "") for r in records)
