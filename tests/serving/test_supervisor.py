"""`switchboard serve --workers N` as a process tree: one migration, every worker serving, failed starts."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from switchboard.db.engine import make_engine
from switchboard.db.migrate import head_revision
from tests.support.databases import DatabaseFactory, alembic_versions
from tests.support.gateway import TEST_JWT_SECRET
from tests.support.gateway import test_encryption_keys as encryption_keys
from tests.support.recorder import tls_context

SWITCHBOARD = Path(sys.executable).with_name("switchboard")
READY = "ready (database:"
MIGRATED = f"database migrated to revision {head_revision()}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(tmp_path: Path, database_url: str, workers: int) -> tuple[subprocess.Popen[bytes], int, Path]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(
        SWITCHBOARD_DATA_DIR=str(tmp_path / "var"),
        SWITCHBOARD_DATABASE_URL=database_url,
        SWITCHBOARD_JWT_SECRET=TEST_JWT_SECRET,
        SWITCHBOARD_ENCRYPTION_KEYS=encryption_keys("k1"),
    )
    port = _free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(SWITCHBOARD), "serve", "--port", str(port), "--workers", str(workers)],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, port, log_path


def _stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    return process.returncode


def _wait_until(condition: object, process: subprocess.Popen[bytes], log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if process.poll() is not None:
            raise AssertionError(f"serve exited with {process.returncode}:\n{log_path.read_text()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting; the log so far:\n{log_path.read_text()}")
        time.sleep(0.05)


def _answers(port: int) -> bool:
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, verify=tls_context())
        return answer.status_code == 200
    except httpx.TransportError:
        return False


async def _block_the_first_migration(url: str) -> None:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:  # a table the first migration creates, in its way
            await conn.execute(text("CREATE TABLE idempotency_keys (id INTEGER PRIMARY KEY)"))
    finally:
        await engine.dispose()


def test_two_workers_on_a_fresh_database_migrate_it_once_and_both_serve(
    tmp_path: Path, databases: DatabaseFactory
) -> None:
    url = asyncio.run(databases.create())
    process, port, log_path = _serve(tmp_path, url, workers=2)
    try:
        _wait_until(lambda: _answers(port), process, log_path, timeout=60)
        _wait_until(lambda: log_path.read_text().count(READY) == 2, process, log_path, timeout=60)
    finally:
        code = _stop(process)
    output = log_path.read_text()
    assert code == 0, output
    assert output.count(MIGRATED) == 1, output
    assert "Traceback" not in output, output
    assert asyncio.run(alembic_versions(url)) == [head_revision()]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_migration_stops_the_start_with_its_reason_and_a_non_zero_exit(
    tmp_path: Path, databases: DatabaseFactory, workers: int
) -> None:
    url = asyncio.run(databases.create())
    asyncio.run(_block_the_first_migration(url))
    process, port, log_path = _serve(tmp_path, url, workers)
    try:
        code = process.wait(timeout=60)
    finally:
        _stop(process)
    output = log_path.read_text()
    assert code == 3, output
    assert f"migrating the database to revision {head_revision()} failed" in output
    assert "idempotency_keys" in output
    if workers > 1:
        assert "switchboard: a worker could not start (its error is above); stopped" in output
    assert not _answers(port)
