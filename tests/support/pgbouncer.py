"""A throwaway PgBouncer in transaction pooling mode, in front of a test's own PostgreSQL cluster.

Its configuration lives in a temporary directory, it listens on a free loopback port and trusts
every user (the cluster behind it does too); `stop()` ends it and removes the directory.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support import pg_cluster

BINARY_HINT = "PgBouncer is not installed: apt-get install -y pgbouncer (Debian's package)"


def binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (path for path in ("/usr/sbin/pgbouncer",) if os.access(path, os.X_OK)), None
    )


@dataclass
class Bouncer:
    directory: Path
    port: int
    process: subprocess.Popen[bytes]

    def url(self, database: str, query: str = "") -> str:
        """A Switchboard database URL through PgBouncer."""
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}{query}"

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)


def start(server_port: int, pool_size: int, timeout_s: float = 30.0) -> Bouncer:
    """PgBouncer on a free port, `pool_size` server connections per database and user."""
    found = binary()
    if found is None:
        raise RuntimeError(BINARY_HINT)
    directory = Path(tempfile.mkdtemp(prefix="switchboard-pgbouncer-"))
    port = pg_cluster.free_port()
    (directory / "users.txt").write_text('"postgres" ""\n')
    (directory / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host=127.0.0.1 port={server_port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {directory / 'users.txt'}\n"
        "pool_mode = transaction\n"
        f"default_pool_size = {pool_size}\n"
        "max_client_conn = 500\n"
        f"logfile = {directory / 'pgbouncer.log'}\n"
        f"pidfile = {directory / 'pgbouncer.pid'}\n"
    )
    argv = [found, str(directory / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        owner = pwd.getpwnam("postgres")
        for path in (directory, *directory.iterdir()):
            os.chown(path, owner.pw_uid, owner.pw_gid)
        argv = ["runuser", "-u", "postgres", "--", *argv]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    bouncer = Bouncer(directory, port, process)
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            text = bouncer.log()
            bouncer.stop()
            raise RuntimeError(f"PgBouncer exited at start: {text[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return bouncer
        except OSError:
            if time.monotonic() > deadline:
                bouncer.stop()
                raise RuntimeError("PgBouncer did not listen in time") from None
            time.sleep(0.05)
