"""Child services started by the benchmark: free ports, start in their own session, stop by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


class BenchError(Exception):
    """The benchmark cannot go on; the message says why."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Child:
    """A long-running service we started; stopped (with its process group) by pid only."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("ab")
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def check_alive(self) -> None:
        if not self.alive():
            raise BenchError(
                f"{self.name} exited with status {self.proc.returncode}; log {self.log_path}:\n"
                + self.log_tail()
            )

    def wait_port(self, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if port_open(port):
                return
            time.sleep(0.02)
        raise BenchError(f"{self.name} did not listen on port {port} within {timeout:.0f} s")

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM, then SIGKILL of the child's own process group (it runs in its own session)."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # leftovers in the group this child leads
        if self.proc.poll() is None:
            self.proc.wait(timeout=5)
        self._log.close()
