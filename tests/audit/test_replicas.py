"""Two gateways on one database append to one chain: concurrent changes on both stay one linear chain."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.audit.conftest import audit_events, run_cli, sql
from tests.conftest import GatewayFactory
from tests.support.databases import DatabaseFactory
from tests.support.gateway import User

ROOMS_PER_WORKER = 8


def test_two_replicas_changing_things_at_once_keep_one_linear_chain_that_verifies(
    make_gateway: GatewayFactory, databases: DatabaseFactory, tmp_path: Path
) -> None:
    url = asyncio.run(databases.create())
    replicas = (make_gateway(database_url=url), make_gateway(database_url=url))
    before = len(audit_events(replicas[0].user("Admin")))
    workers = [gw.user() for gw in replicas for _ in range(3)]
    start = threading.Barrier(len(workers))

    def work(user: User) -> list[int]:
        client = user.client
        client.get("/health")
        start.wait()
        return [
            client.post("/working-groups", json={"name": f"r{n}"}).status_code
            for n in range(ROOMS_PER_WORKER)
        ]

    with ThreadPoolExecutor(len(workers)) as pool:
        statuses = [code for codes in pool.map(work, workers) for code in codes]
    assert statuses == [201] * len(statuses)

    # Each room: its creation and its owner's membership, on whichever replica served it.
    events = audit_events(replicas[1].user("Admin"))
    assert len(events) == before + 2 * len(statuses)
    seqs = [int(row[0]) for row in sql(replicas[0], "SELECT seq FROM audit_events ORDER BY seq")]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    hashes = {e["hash"] for e in events}
    assert len(hashes) == len(events)
    done = run_cli(replicas[0], tmp_path, "audit", "verify")
    assert done.returncode == 0, done.stdout + done.stderr
