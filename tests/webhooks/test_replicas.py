"""Two gateway processes on one database send each event once (SPEC §22): PostgreSQL claims rows with
SKIP LOCKED, SQLite in its one write transaction; both dispatchers poll the same outbox."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.webhook_receiver import WebhookReceiver
from tests.limits.test_replicas import tokens, two_replicas
from tests.support.databases import DatabaseFactory
from tests.support.recorder import RECORDER, tls_context
from tests.webhooks.conftest import new_path, webhooks_config

EVENTS = 30


def delivery_log(url: str, hook_id: str, auth: dict[str, str]) -> list[dict[str, Any]]:
    log: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        page = httpx.get(
            f"{url}/webhooks/{hook_id}/deliveries", params=params, headers=auth, timeout=30
        ).json()
        log.extend(page["data"])
        cursor = page["next_cursor"]
        if cursor is None:
            return log


def test_each_event_is_delivered_once_by_two_replicas(
    databases: DatabaseFactory, tmp_path: Path, fake_provider: Any, receiver: WebhookReceiver
) -> None:
    _, admin = tokens()
    auth = {"authorization": f"Bearer {admin}"}
    path = new_path()
    with two_replicas(databases, tmp_path, webhooks_config(fake_provider.base_url)) as (_, urls):
        created = httpx.post(
            f"{urls[0]}/webhooks",
            json={"url": receiver.base_url + path, "events": ["limit.refused"]},
            headers=auth,
            timeout=30,
        )
        assert created.status_code == 201, created.text
        hook = created.json()
        receiver.secrets[path] = RECORDER.remember_secret(hook["secret"])
        queued = []
        for index in range(EVENTS):
            # Half the events enter through each replica; either replica may send any of them.
            answer = httpx.post(
                f"{urls[index % 2]}/webhooks/{hook['id']}/test",
                headers=auth,
                timeout=30,
                verify=tls_context(),
            )
            assert answer.status_code == 202, answer.text
            queued.append(answer.json()["id"])
        received = receiver.wait_for(path, EVENTS)
        # The log says delivered once each sender has recorded its answer, a moment after the receiver saw it.
        deadline = time.monotonic() + 60
        while True:
            log = delivery_log(urls[1], hook["id"], auth)
            if all(d["status"] == "delivered" for d in log) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    seen = Counter(delivery.message_id for delivery in receiver.of(path))
    assert sorted(seen) == sorted(queued)
    assert set(seen.values()) == {1}
    assert all(delivery.verified for delivery in received)
    # A row two senders had claimed would count two attempts.
    assert sorted((d["status"], d["attempts"]) for d in log) == [("delivered", 1)] * EVENTS
