"""A PostgreSQL outage, against a server this test starts and stops itself.

While the database is away, model calls are refused with 503 before any provider is called; calls the
provider was already answering keep exactly one usage record each, written when the database returns;
and the gateway recovers by itself.
"""

from __future__ import annotations

import glob
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchboard.logging_setup import flush_all
from tests.conftest import GatewayFactory
from tests.llm.conftest import make_caller, unique_model

BIN = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1])
MESSAGES = [{"role": "user", "content": "hi"}]


class PrivateCluster:
    """A throw-away PostgreSQL server on its own port and directory, run as the postgres user."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "pg"
        self.dir.mkdir()
        shutil.chown(self.dir, "postgres", "postgres")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._as_postgres(str(BIN / "initdb"), "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres")

    def _as_postgres(self, *command: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(
            str(BIN / "pg_ctl"),
            "-D",
            str(self.dir / "data"),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._as_postgres(str(BIN / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")

    def create_database(self, name: str) -> str:
        self._as_postgres(str(BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), name)
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{name}"


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    # Not under pytest's temporary directory: the postgres user cannot enter root's (mode 0700).
    root = Path(tempfile.mkdtemp(prefix="sb-outage-"))
    shutil.chown(root, "postgres", "postgres")
    made = PrivateCluster(root)
    made.start()
    yield made
    subprocess.run(
        [
            "runuser",
            "-u",
            "postgres",
            "--",
            str(BIN / "pg_ctl"),
            "-D",
            str(made.dir / "data"),
            "-m",
            "immediate",
            "stop",
        ],
        capture_output=True,
    )
    shutil.rmtree(root, ignore_errors=True)


def _chat(client: httpx.Client, model: str, results: list[httpx.Response]) -> None:
    results.append(
        client.post("/v1/chat/completions", json={"model": f"openai/{model}", "messages": MESSAGES})
    )


def test_a_database_outage_refuses_new_calls_keeps_every_paid_record_and_heals_itself(
    cluster: PrivateCluster,
    make_gateway: GatewayFactory,
    fake_provider: Any,
    capfd: pytest.CaptureFixture[str],
) -> None:
    gateway = make_gateway(database_url=cluster.create_database(f"sb_{uuid.uuid4().hex[:8]}"))
    caller = make_caller(gateway, fake_provider, providers=("openai",))
    client = caller.user.client
    assert (
        client.post(
            "/v1/chat/completions", json={"model": "openai/gpt-4o-mini", "messages": MESSAGES}
        ).status_code
        == 200
    )

    # Calls the provider is answering when the database goes away.
    slow = unique_model("inflight")
    fake_provider.script(slow, first_byte_delay=3.0)
    in_flight: list[httpx.Response] = []
    threads = [threading.Thread(target=_chat, args=(client, slow, in_flight)) for _ in range(4)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(fake_provider.received(slow)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    cluster.stop()
    stopped = time.monotonic()

    # New calls: 503 with Retry-After within 5 s of the outage, and no provider request.
    refused = unique_model("refused")
    response = None
    while time.monotonic() - stopped < 15:
        response = client.post(
            "/v1/chat/completions", json={"model": f"openai/{refused}", "messages": MESSAGES}
        )
        if response.status_code == 503:
            break
        time.sleep(0.2)
    assert response is not None and response.status_code == 503, response.text if response else None
    assert time.monotonic() - stopped < 8
    assert int(response.headers["retry-after"]) >= 1
    assert response.json()["error"]["message"]
    refused_at_provider = len(fake_provider.received(refused))
    for _ in range(3):
        assert (
            client.post(
                "/v1/chat/completions", json={"model": f"openai/{refused}", "messages": MESSAGES}
            ).status_code
            == 503
        )
    assert len(fake_provider.received(refused)) == refused_at_provider

    for thread in threads:
        thread.join(30)
    assert [r.status_code for r in in_flight] == [200] * 4  # paid for, answered, spooled

    cluster.start()
    back = time.monotonic()
    ok = None
    while time.monotonic() - back < 15:
        ok = client.post("/v1/chat/completions", json={"model": "openai/gpt-4o-mini", "messages": MESSAGES})
        if ok.status_code == 200:
            break
        time.sleep(0.2)
    assert ok is not None and ok.status_code == 200
    assert time.monotonic() - back < 10

    wanted = {r.headers["x-request-id"] for r in in_flight}
    deadline = time.monotonic() + 30
    while True:
        records = [
            r
            for r in client.get("/usage/me", params={"limit": 500}).json()["data"]
            if r["request_id"] in wanted
        ]
        if len(records) >= 4 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert sorted(r["request_id"] for r in records) == sorted(wanted)  # each exactly once
    assert {r["status"] for r in records} == {"ok"}
    assert all(r["prompt_tokens"] == 11 for r in records)

    flush_all()  # log lines are written in batches: everything logged so far reaches the stream now
    captured = capfd.readouterr()
    assert (captured.out + captured.err).count("Traceback") < 50
