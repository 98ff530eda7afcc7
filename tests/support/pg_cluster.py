"""A throwaway PostgreSQL cluster: initdb in a temporary directory, a free loopback port, removed after.

The test command and the tests that need a server of their own (a small `max_connections`, say) start
one here rather than touching a server they did not start. As a script:

    python -m tests.support.pg_cluster start [--max-connections N]   # prints shell `export` lines
    python -m tests.support.pg_cluster stop DIR
"""

from __future__ import annotations

import argparse
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# initdb and postgres refuse to run as root; Debian's packages create this user.
_UNPRIVILEGED_USER = "postgres"


def bin_dir() -> Path:
    """The newest installed PostgreSQL's binaries (Debian keeps each major version apart)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    if found:
        return Path(found[-1])
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True)
        return Path(out.stdout.strip())
    raise RuntimeError("PostgreSQL's server binaries were not found (Debian package postgresql)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", _UNPRIVILEGED_USER, "--", *argv]


@dataclass(frozen=True)
class Cluster:
    directory: Path
    port: int

    @property
    def admin_dsn(self) -> str:
        """A libpq DSN for the superuser's maintenance database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def stop(self) -> None:
        pg_ctl = str(bin_dir() / "pg_ctl")
        subprocess.run(
            _as_owner([pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def start(max_connections: int = 100, timeout_s: float = 60.0) -> Cluster:
    """initdb and start a cluster that trusts loopback connections; durability is off (it is thrown away)."""
    directory = Path(tempfile.mkdtemp(prefix="switchboard-pg-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam(_UNPRIVILEGED_USER)
        os.chown(directory, owner.pw_uid, owner.pw_gid)
    os.chmod(directory, 0o700)
    cluster = Cluster(directory, free_port())
    tools = bin_dir()
    subprocess.run(
        _as_owner(
            [str(tools / "initdb"), "-D", str(cluster.data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
        ),
        capture_output=True,
        check=True,
    )
    options = " ".join(
        [
            f"-p {cluster.port}",
            "-c listen_addresses=127.0.0.1",
            f"-c unix_socket_directories={directory}",
            f"-c max_connections={max_connections}",
            "-c fsync=off",
            "-c synchronous_commit=off",
            "-c full_page_writes=off",
        ]
    )
    subprocess.run(
        _as_owner(
            [
                str(tools / "pg_ctl"),
                "-D",
                str(cluster.data),
                "-o",
                options,
                "-l",
                str(directory / "server.log"),
                "-w",
                "-t",
                str(int(timeout_s)),
                "start",
            ]
        ),
        capture_output=True,
        check=True,
    )
    deadline = time.monotonic() + timeout_s
    while True:
        ready = subprocess.run(
            [str(tools / "pg_isready"), "-h", "127.0.0.1", "-p", str(cluster.port), "-q"], check=False
        )
        if ready.returncode == 0:
            return cluster
        if time.monotonic() > deadline:
            cluster.stop()
            raise RuntimeError(f"the throwaway PostgreSQL cluster did not start within {timeout_s} s")
        time.sleep(0.1)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.pg_cluster")
    verbs = parser.add_subparsers(dest="verb", required=True)
    start_verb = verbs.add_parser("start", help="start a cluster; print shell export lines")
    start_verb.add_argument("--max-connections", type=int, default=100)
    stop_verb = verbs.add_parser("stop", help="stop the cluster in DIR and remove DIR")
    stop_verb.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "start":
        cluster = start(args.max_connections)
        print(f"export SWITCHBOARD_TEST_DATABASE_URL={shlex.quote(cluster.admin_dsn)}")
        print(f"export SWITCHBOARD_TEST_PG_CLUSTER={shlex.quote(str(cluster.directory))}")
        return 0
    Cluster(args.directory, port=0).stop()  # pg_ctl finds the server by its data directory
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
