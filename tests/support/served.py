"""`switchboard serve` as a real process (uvloop, the httptools protocol, its own workers), for the
tests that need what only the served process does: a SIGKILL, two workers, two replicas."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

from tests.support import gateway as support
from tests.support.databases import DatabaseFactory

SWITCHBOARD = Path(sys.executable).with_name("switchboard")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def served_env(
    databases: DatabaseFactory, directory: Path, config: dict[str, Any], **settings: str
) -> dict[str, str]:
    """The environment of a served gateway on a new, migrated database, with `config` written to
    `directory` and its data there too; `settings` add or override `SWITCHBOARD_*` variables. None of
    this process's own `SWITCHBOARD_*` variables (the test run's) reach it."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")},
        "SWITCHBOARD_ENV": "development",
        "SWITCHBOARD_DATA_DIR": str(directory / "data"),
        "SWITCHBOARD_DATABASE_URL": asyncio.run(databases.create(migrated=True)),
        "SWITCHBOARD_JWT_SECRET": support.TEST_JWT_SECRET,
        "SWITCHBOARD_ENCRYPTION_KEYS": support.test_encryption_keys("k1"),
        "SWITCHBOARD_CONFIG": str(support.write_config(directory, config)),
        "SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "true",
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        **settings,
    }


@contextmanager
def gateway_process(
    env: dict[str, str], log: Path, *serve_args: str, wrapper: Sequence[str] = ()
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`switchboard serve` on a free port (with `serve_args`, run under `wrapper` if given), once it
    answers /health; in a session of its own, whose every process (its workers too) ends with it."""
    port = free_port()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*wrapper, str(SWITCHBOARD), "serve", "--port", str(port), *serve_args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "gateway did not start"
            time.sleep(0.1)
        yield process, url
    finally:
        # The whole group: a server killed by a test leaves its workers behind, serving on for good.
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
