"""The PostgreSQL connection budget (docs/postgres-connections.md): eight busy gateway processes share
a server of the default max_connections (100); a server out of slots is a start-up error naming the
setting; the gateway works through PgBouncer in transaction pooling mode.

Each test uses a server of its own (tests/support/pg_cluster.py): the suite's shared server has far
more connections than a default one, and is used by every other test at the same time.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from switchboard.db.engine import DEFAULT_POOL_SIZE
from tests.conftest import default_test_config
from tests.limits.test_replicas import tokens
from tests.support import gateway as support
from tests.support import pg_cluster, pgbouncer
from tests.support.databases import backend
from tests.support.recorder import RECORDER
from tests.support.served import SWITCHBOARD, free_port, wait_until_healthy

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(backend() != "postgres", reason="a PostgreSQL server of its own (postgres half)"),
]

MAX_CONNECTIONS = 100
PROCESSES = 8
ROUNDS = 2
CALLS = 12  # model calls per gateway and round, all at once, under two limits
READS = 12  # reads per gateway and round, at the same time: each holds a request session
# On the default economy, never reached: every call is reserved and settled by the ledger.
LIMITS = (("cost", "month", "9000000000000"), ("requests", "total", "1000000"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[pg_cluster.Cluster]:
    server = pg_cluster.start(max_connections=MAX_CONNECTIONS)
    yield server
    server.stop()


async def _admin(dsn: str, statement: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def new_database(cluster: pg_cluster.Cluster) -> str:
    name = f"budget_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(cluster.admin_dsn, f'CREATE DATABASE "{name}"'))
    return name


def gateway_env(tmp_path: Path, database_url: str, fake_provider: Any) -> dict[str, str]:
    # The gateway's own budget: not the suite's small one (tests/support/gateway.py), nor any override.
    env = {k: v for k, v in os.environ.items() if k != "SWITCHBOARD_DATABASE_POOL_SIZE"}
    config = default_test_config(fake_provider.base_url)
    config["economies"] = [{"slug": "default", "name": "Default", "currency": "USD"}]
    # In the config file rather than made over HTTP: every process has them from its start.
    config["limits"] = [
        {
            "subject_type": "economy",
            "subject_id": "default",
            "metric": metric,
            "window": window,
            "amount": amount,
        }
        for metric, window, amount in LIMITS
    ]
    env.update(
        SWITCHBOARD_ENV="development",
        SWITCHBOARD_DATA_DIR=str(tmp_path / "data"),
        SWITCHBOARD_DATABASE_URL=database_url,
        SWITCHBOARD_JWT_SECRET=support.TEST_JWT_SECRET,
        SWITCHBOARD_ENCRYPTION_KEYS=support.test_encryption_keys("k1"),
        SWITCHBOARD_CONFIG=str(support.write_config(tmp_path, config)),
        SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS="true",
        SWITCHBOARD_LOG_LEVEL="WARNING",
    )
    return env


@contextmanager
def gateways(env: dict[str, str], tmp_path: Path, count: int) -> Iterator[list[str]]:
    """`count` `switchboard serve` processes started at once (their migrations race on a fresh
    database), once each answers /health; their URLs."""
    with ExitStack() as stack:
        started: list[tuple[subprocess.Popen[bytes], Path, str]] = []
        for index in range(count):
            port, log = free_port(), tmp_path / f"gateway-{index}.log"
            with log.open("ab") as out:
                process = subprocess.Popen(
                    [str(SWITCHBOARD), "serve", "--port", str(port)], env=env, stdout=out, stderr=out
                )
            stack.callback(_end, process)
            started.append((process, log, f"http://127.0.0.1:{port}"))
        for process, log, url in started:
            wait_until_healthy(process, url, log, seconds=120)
        yield [url for _, _, url in started]
        for _, log, _ in started:
            assert "too many clients" not in log.read_text(), log.read_text()


def _end(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def setup_calls(url: str, fake_provider: Any) -> tuple[str, str, list[str]]:
    """A user with a credential to the fake provider; (user, admin, the ids of LIMITS)."""
    user, admin = tokens()
    secret = RECORDER.remember_secret(f"sk-budget-{uuid.uuid4().hex}")
    created = httpx.post(
        f"{url}/llm-credentials",
        headers={"authorization": f"Bearer {user}"},
        json={"provider": "openai", "secret": secret, "base_url": f"{fake_provider.base_url}/v1"},
    )
    assert created.status_code == 201, created.text
    listed = httpx.get(f"{url}/limits", headers={"authorization": f"Bearer {admin}"})
    assert listed.status_code == 200, listed.text
    by_metric = {row["metric"]: str(row["id"]) for row in listed.json()["data"]}
    return user, admin, [by_metric[metric] for metric, _, _ in LIMITS]


async def load(urls: list[str], user: str, admin: str, limit_ids: list[str]) -> dict[int, int]:
    """ROUNDS rounds of CALLS model calls (half streamed) and READS reads on every gateway at once;
    how many answers had each status."""
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    statuses: dict[int, int] = {}
    # A connection per request: none reused as the gateway closes it for idling (a race of HTTP
    # keep-alive that has nothing to do with the database).
    fresh = httpx.Limits(max_keepalive_connections=0)

    def client(url: str, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=120, limits=fresh
        )

    users = [client(url, user) for url in urls]
    admins = [client(url, admin) for url in urls]

    async def call(caller: httpx.AsyncClient, index: int) -> int:
        if index % 2:
            async with caller.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as answer:
                await answer.aread()
                return answer.status_code
        return (await caller.post("/v1/chat/completions", json=body)).status_code

    async def read(reader: httpx.AsyncClient, index: int) -> int:
        path = (
            f"/limits/{limit_ids[index % 2]}/status"
            if index % 3
            else "/economies/default/usage/summary?group_by=model"
        )
        return (await reader.get(path)).status_code

    try:
        for _ in range(ROUNDS):
            tasks = [call(caller, i) for caller in users for i in range(CALLS)]
            tasks += [read(reader, i) for reader in admins for i in range(READS)]
            for status in await asyncio.gather(*tasks):
                statuses[status] = statuses.get(status, 0) + 1
    finally:
        for each in (*users, *admins):
            await each.aclose()
    return statuses


async def load_watching_connections(
    cluster: pg_cluster.Cluster, database: str, urls: list[str], ids: tuple[str, str, list[str]]
) -> tuple[dict[int, int], int]:
    """`load`, while pg_stat_activity is sampled: (statuses, the most connections seen at once)."""
    watcher = await asyncpg.connect(cluster.admin_dsn)
    peak = 0
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            count = await watcher.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", database
            )
            peak = max(peak, int(count))
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    try:
        statuses = await load(urls, *ids)
    finally:
        done.set()
        await sampler
        await watcher.close()
    return statuses, peak


def test_eight_busy_gateways_share_a_server_of_a_hundred_connections(
    cluster: pg_cluster.Cluster, fake_provider: Any, tmp_path: Path
) -> None:
    database = new_database(cluster)
    env = gateway_env(
        tmp_path, f"postgresql+asyncpg://postgres@127.0.0.1:{cluster.port}/{database}", fake_provider
    )
    with gateways(env, tmp_path, PROCESSES) as urls:
        user, admin, limit_ids = setup_calls(urls[0], fake_provider)
        statuses, peak = asyncio.run(
            load_watching_connections(cluster, database, urls, (user, admin, limit_ids))
        )
        calls = PROCESSES * ROUNDS * (CALLS + READS)
        assert statuses == {200: calls}, statuses
        # Every process within its budget (a connection being replaced may show twice for a moment:
        # its backend still exiting as the next one starts), and room left for an operator.
        assert peak <= PROCESSES * (DEFAULT_POOL_SIZE + 1), peak
        asyncio.run(_admin(cluster.admin_dsn, "SELECT 1"))
        scraped = httpx.get(f"{urls[0]}/metrics", headers={"authorization": f"Bearer {admin}"})
        assert scraped.status_code == 200, scraped.text
        assert f"switchboard_db_pool_size {float(DEFAULT_POOL_SIZE)}" in scraped.text
        assert "switchboard_db_connections_in_use " in scraped.text
        assert "switchboard_db_pool_waits_total " in scraped.text


def test_a_server_out_of_connection_slots_is_a_start_up_error_naming_the_budget(
    cluster: pg_cluster.Cluster, fake_provider: Any, tmp_path: Path
) -> None:
    database = new_database(cluster)
    env = gateway_env(
        tmp_path, f"postgresql+asyncpg://postgres@127.0.0.1:{cluster.port}/{database}", fake_provider
    )

    async def fill_then_serve() -> subprocess.CompletedProcess[str]:
        held: list[Any] = []
        try:
            while True:  # every slot, the superuser's reserved ones included
                try:
                    held.append(await asyncpg.connect(cluster.admin_dsn))
                except asyncpg.TooManyConnectionsError:
                    break
                assert len(held) <= MAX_CONNECTIONS
            argv = [str(SWITCHBOARD), "serve", "--port", str(free_port())]
            return await asyncio.to_thread(
                subprocess.run, argv, env=env, capture_output=True, text=True, timeout=60, check=False
            )
        finally:
            for conn in held:
                await conn.close()

    finished = asyncio.run(fill_then_serve())
    assert finished.returncode != 0
    said = finished.stderr + finished.stdout
    assert "too many clients" in said, said
    assert "SWITCHBOARD_DATABASE_POOL_SIZE" in said and "max_connections" in said, said
    assert "Traceback" not in said, said


def test_the_gateway_works_through_pgbouncer_in_transaction_pooling_mode(
    cluster: pg_cluster.Cluster, fake_provider: Any, tmp_path: Path
) -> None:
    if pgbouncer.binary() is None:
        pytest.fail(pgbouncer.BINARY_HINT)
    database = new_database(cluster)
    # Two server connections for two gateways of up to ten each: transactions from every client
    # connection run on whichever server connection is free (no statement may outlive its transaction).
    bouncer = pgbouncer.start(cluster.port, pool_size=2)
    try:
        env = gateway_env(tmp_path, bouncer.url(database, "?statement_cache_size=0"), fake_provider)
        with gateways(env, tmp_path, 2) as urls:
            user, admin, limit_ids = setup_calls(urls[0], fake_provider)
            statuses = asyncio.run(load(urls, user, admin, limit_ids))
            calls = 2 * ROUNDS * CALLS
            assert statuses == {200: calls + 2 * ROUNDS * READS}, (statuses, bouncer.log()[-3000:])
            # Every call reserved and settled once (settlements are batched: they land shortly after).
            deadline = time.monotonic() + 30
            while True:
                requests = httpx.get(
                    f"{urls[1]}/limits/{limit_ids[1]}/status", headers={"authorization": f"Bearer {admin}"}
                )
                assert requests.status_code == 200, requests.text
                standing = (requests.json()["used"], requests.json()["reserved"])
                if standing == (str(calls), "0") or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert standing == (str(calls), "0")
    finally:
        bouncer.stop()
