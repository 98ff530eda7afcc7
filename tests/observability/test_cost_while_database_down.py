"""A call answered while the database is away (its record waits in the spool, SPEC §8): the cost
counter and its access record still carry its cost, from the prices the usage writer read before,
and the record written once the database returns says the same cost. PostgreSQL only: the outage
machinery (heartbeat, spool) is PostgreSQL's; a SQLite file is never "unreachable"."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import httpx

from tests.conftest import GatewayFactory
from tests.db.test_outage import PrivateCluster, cluster
from tests.foundation.test_access_log import captured_log
from tests.llm.conftest import make_caller
from tests.observability.samples import Samples, parse
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER

__all__ = ["cluster"]  # the fixture, shared with tests/db/test_outage.py
METRICS_TOKEN = RECORDER.remember_secret(f"metrics-{uuid.uuid4().hex}")
MESSAGES = [{"role": "user", "content": "hi"}]
MODEL = "gpt-4o-mini"  # priced (litellm's map), so its cost is not 0


def _scrape(gateway: Gateway) -> Samples:
    response = httpx.get(f"{gateway.url}/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200, response.text
    return parse(response.text)


def _access_record(buffer: Any, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while True:
        found = [json.loads(line) for line in buffer.getvalue().splitlines() if request_id in line]
        found = [line for line in found if line.get("logger") == "switchboard.access"]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, buffer.getvalue()[-2000:]
            return found[0]
        time.sleep(0.02)


def _records(client: httpx.Client, request_id: str) -> list[dict[str, Any]]:
    """The call's stored records ([] while the database is still on its way back)."""
    response = client.get("/usage/me", params={"limit": 500})
    data: list[dict[str, Any]] = response.json()["data"] if response.status_code == 200 else []
    return [record for record in data if record["request_id"] == request_id]


def test_a_call_answered_while_the_database_is_down_still_counts_and_logs_its_cost(
    cluster: PrivateCluster, make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    gateway = make_gateway(
        database_url=cluster.create_database(f"sb_{uuid.uuid4().hex[:8]}"),
        env={
            "SWITCHBOARD_METRICS_TOKEN": METRICS_TOKEN,
            "SWITCHBOARD_LOG_LEVEL": "INFO",
            "SWITCHBOARD_LOG_FORMAT": "json",
        },
    )
    client = make_caller(gateway, fake_provider, providers=("openai",)).user.client
    body = {"model": f"openai/{MODEL}", "messages": MESSAGES}
    # Priced while the database is up: the usage writer has read the economy and the model's prices.
    warm = client.post("/v1/chat/completions", json=body)
    assert warm.status_code == 200, warm.text
    [priced] = _records(client, warm.headers["x-request-id"])
    cost = int(priced["cost"])
    assert cost > 0
    economy = priced["economy_id"]

    # A call the provider is answering when the database goes away (new calls would be refused).
    fake_provider.enqueue(MODEL, first_byte_delay=3.0)
    request_id = f"spooled-{uuid.uuid4().hex}"
    answered: list[httpx.Response] = []
    before = _scrape(gateway)
    with captured_log() as buffer:
        call = threading.Thread(
            target=lambda: answered.append(
                client.post("/v1/chat/completions", json=body, headers={"x-request-id": request_id})
            )
        )
        asked = len(fake_provider.received(MODEL))
        call.start()
        deadline = time.monotonic() + 10
        while len(fake_provider.received(MODEL)) == asked:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        cluster.stop()
        call.join(30)
        assert [r.status_code for r in answered] == [200]  # paid for, answered, spooled
        logged = _access_record(buffer, request_id)
    moved = _scrape(gateway).minus(before)

    assert logged["status"] == 200 and logged["cost"] == str(cost)
    assert moved.value("switchboard_cost_total", economy=economy) == cost

    # Once the database is back the spooled record is written, costed the same.
    cluster.start()
    deadline = time.monotonic() + 30
    while not (stored := _records(client, request_id)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [record["cost"] for record in stored] == [str(cost)]
    gateway.stop()
