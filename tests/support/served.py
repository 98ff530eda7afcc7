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
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.support.recorder import tls_context

SWITCHBOARD = Path(sys.executable).with_name("switchboard")


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: every probe is held until all are picked, so that no two are the
    same port (processes started at once bind theirs only later)."""
    with ExitStack() as stack:
        probes = [stack.enter_context(socket.socket()) for _ in range(count)]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]


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
    with gateway_processes(env, [log], *serve_args, wrapper=wrapper) as [started]:
        yield started


@contextmanager
def gateway_processes(
    env: dict[str, str], logs: Sequence[Path], *serve_args: str, wrapper: Sequence[str] = ()
) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    """One `gateway_process` a log, all started at once, once every one answers /health. Each start
    imports the whole gateway (a second or two of CPU): one after the other, the replicas' starts
    added up."""
    started: list[tuple[subprocess.Popen[bytes], str]] = []
    try:
        for port, log in zip(free_ports(len(logs)), logs, strict=True):
            with log.open("ab") as out:
                process = subprocess.Popen(
                    [*wrapper, str(SWITCHBOARD), "serve", "--port", str(port), *serve_args],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            started.append((process, f"http://127.0.0.1:{port}"))
        for (process, url), log in zip(started, logs, strict=True):
            wait_until_healthy(process, url, log)
        yield started
    finally:
        # The whole group: a server killed by a test leaves its workers behind, serving on for good.
        for process, _ in started:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        for process, _ in started:
            process.wait(timeout=30)


def wait_until_healthy(process: subprocess.Popen[bytes], url: str, log: Path, seconds: float = 60) -> None:
    """Until the gateway at `url` answers /health (its log in the failure when it exits first). Each
    process its own `seconds` from when its turn comes: those waited for first started no later."""
    deadline = time.monotonic() + seconds
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/health", timeout=1, verify=tls_context()).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"gateway did not start: {log.read_text()}"
        time.sleep(0.1)
