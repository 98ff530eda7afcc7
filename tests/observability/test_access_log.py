"""The access record (SPEC §17): one per request with the call's figures; the request id on every
record of a request; millisecond RFC 3339 timestamps; JSON mode writes nothing but JSON."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import GatewayFactory, default_test_config
from tests.foundation.test_access_log import captured_log
from tests.llm.conftest import make_caller
from tests.support import gateway as support
from tests.support.probe import ProbeFactory, unique_name
from tests.support.served import SWITCHBOARD, free_port, wait_until_healthy

DEFAULT_ECONOMY = str(uuid.uuid5(uuid.NAMESPACE_URL, "switchboard:economy:default"))
RFC3339_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")
ACCESS_FIELDS = {
    "request_id",
    "method",
    "path",
    "status",
    "latency_ms",
    "ttfb_ms",
    "model",
    "provider",
    "economy_id",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "attempts",
}


def _records(buffer: Any, request_id: str, count: int = 1) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 5
    while True:
        found = [json.loads(line) for line in buffer.getvalue().splitlines() if request_id in line]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_a_model_calls_access_record_carries_its_model_tokens_cost_and_attempts(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    gateway = make_gateway(env={"SWITCHBOARD_LOG_LEVEL": "INFO", "SWITCHBOARD_LOG_FORMAT": "json"})
    caller = make_caller(gateway, fake_provider, providers=("openai",))
    request_id = f"access-{uuid.uuid4().hex}"
    with captured_log() as buffer:
        raw = caller.sdk.chat.completions.with_raw_response.create(
            model="openai/gpt-4o-mini",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            extra_headers={"x-request-id": request_id},
        )
        assert list(raw.parse())
        health = gateway.client().get("/health", headers={"x-request-id": f"{request_id}-health"})
        assert health.status_code == 200
        call, probe = _records(buffer, request_id, 2)
    assert set(call) == ACCESS_FIELDS | {"ts", "level", "logger"}
    assert {k: call[k] for k in ACCESS_FIELDS - {"latency_ms", "ttfb_ms"}} == {
        "request_id": request_id,
        "method": "POST",
        "path": "/v1/chat/completions",
        "status": 200,
        "model": "gpt-4o-mini",
        "provider": "openai",
        "economy_id": DEFAULT_ECONOMY,
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "cost": str(11 * 150 + 7 * 600),
        "attempts": 1,
    }
    assert 0 <= call["ttfb_ms"] <= call["latency_ms"]
    assert call["level"] == "INFO" and call["logger"] == "switchboard.access"
    assert RFC3339_MS.match(call["ts"]), call["ts"]
    # /health has its record too, with no call's figures.
    assert probe["path"] == "/health" and probe["status"] == 200 and set(probe) == set(call)
    assert probe["model"] is None and probe["cost"] is None and probe["ttfb_ms"] >= 0


def test_an_error_logged_during_a_request_carries_its_request_id(make_probe_gateway: ProbeFactory) -> None:
    gateway = make_probe_gateway(env={"SWITCHBOARD_LOG_LEVEL": "INFO", "SWITCHBOARD_LOG_FORMAT": "json"})
    request_id = f"crash-{uuid.uuid4().hex}"
    with captured_log() as buffer:
        response = gateway.user().client.post(
            "/probe/crash", json={"name": unique_name()}, headers={"x-request-id": request_id}
        )
        records = _records(buffer, request_id, 2)
    assert response.status_code == 500
    (error,) = [r for r in records if r["level"] == "ERROR"]
    assert error["request_id"] == request_id and "Traceback" in error["exc"]


def test_a_text_line_written_during_a_request_ends_with_its_request_id(
    make_probe_gateway: ProbeFactory,
) -> None:
    gateway = make_probe_gateway(env={"SWITCHBOARD_LOG_LEVEL": "INFO", "SWITCHBOARD_LOG_FORMAT": "text"})
    request_id = f"crash-{uuid.uuid4().hex}"
    with captured_log() as buffer:
        gateway.user().client.post(
            "/probe/crash", json={"name": unique_name()}, headers={"x-request-id": request_id}
        )
        deadline = time.monotonic() + 5
        while "ERROR" not in buffer.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
    (error,) = [line for line in buffer.getvalue().splitlines() if " ERROR " in line]
    assert error.endswith(f" rid={request_id}")


def test_in_json_mode_every_line_a_two_worker_server_writes_is_json_with_a_level(
    databases: Any, fake_provider: Any, tmp_path: Path
) -> None:
    """From the first start, whose generated development secret is warned of, to the stop."""
    import asyncio

    config = support.write_config(tmp_path, default_test_config(fake_provider.base_url))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")},
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "fresh"),  # no secrets yet: serve generates them
        "SWITCHBOARD_DATABASE_URL": asyncio.run(databases.create()),
        "SWITCHBOARD_CONFIG": str(config),
        "SWITCHBOARD_LOG_FORMAT": "json",
    }
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(SWITCHBOARD), "serve", "--port", str(port), "--workers", "2"],
            env=env,
            stdout=out,
            stderr=out,
        )
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}", log)
        assert httpx.get(f"http://127.0.0.1:{port}/metrics").status_code == 401
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    lines = log.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # raises on any line that is not JSON
    assert all(isinstance(r, dict) and r.get("level") for r in records)
    assert all(RFC3339_MS.match(r["ts"]) for r in records)
    assert any(r["level"] == "WARNING" and "GENERATED a development secret" in r["message"] for r in records)
    assert any(r.get("path") == "/metrics" and r.get("status") == 401 for r in records)
