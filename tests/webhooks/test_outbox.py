"""The outbox survives a restart, and the egress guard is asked on every connect (SPEC §22, §21)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import GatewayFactory
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.webhooks.conftest import (
    FIRST_RETRY,
    create_webhook,
    deliveries,
    flush,
    new_path,
    post_webhook,
    webhooks_config,
)


def test_a_pending_delivery_is_sent_after_a_restart(
    make_gateway: GatewayFactory, databases: DatabaseFactory, fake_provider: Any, receiver: WebhookReceiver
) -> None:
    database = asyncio.run(databases.create())
    # One keyring for both: the secret sealed by the first is opened by the second.
    env = {
        "SWITCHBOARD_WEBHOOK_FIRST_RETRY_SECONDS": FIRST_RETRY,
        "SWITCHBOARD_ENCRYPTION_KEYS": support.test_encryption_keys(),
    }
    config = webhooks_config(fake_provider.base_url)
    first = make_gateway(config=config, env=env, database_url=database)
    admin = first.user(role="Admin")
    hook = create_webhook(first.url, admin, receiver, ["audit.event"])
    receiver.statuses[hook["path"]] = [503] * 10_000  # down until the restart
    assert admin.client.post(f"/webhooks/{hook['id']}/test").status_code == 202
    [refused, *_] = receiver.wait_for(hook["path"], 1)
    first.stop()
    receiver.statuses[hook["path"]] = []
    second = make_gateway(config=config, env=env, database_url=database)
    again = second.client(admin.token)
    delivered = receiver.wait_for(hook["path"], 1, answered=200)
    assert delivered[0].message_id == refused.message_id
    assert delivered[0].verified
    flush(second)
    [logged] = deliveries(again, hook["id"])
    assert (logged["status"], logged["response_status"]) == ("delivered", 200)
    assert logged["attempts"] == len(receiver.of(hook["path"]))


def test_a_private_address_is_refused_at_connect_time_without_the_setting(
    make_gateway: GatewayFactory, databases: DatabaseFactory, fake_provider: Any, receiver: WebhookReceiver
) -> None:
    """Stored while private addresses were allowed, sent by a gateway that refuses them: the guard
    refuses the connection, and the receiver (listening there) gets nothing."""
    database = asyncio.run(databases.create())
    config = webhooks_config(fake_provider.base_url)
    keys = support.test_encryption_keys()
    lenient = make_gateway(config=config, database_url=database, env={"SWITCHBOARD_ENCRYPTION_KEYS": keys})
    admin = lenient.user(role="Admin")
    path = new_path()
    port = urlsplit(receiver.base_url).port
    response = post_webhook(
        lenient.url, admin, {"url": f"https://127.0.0.1:{port}{path}", "events": ["audit.event"]}
    )
    assert response.status_code == 201
    hook_id = response.json()["id"]
    lenient.stop()
    strict = make_gateway(
        config=config,
        database_url=database,
        env={"SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "false", "SWITCHBOARD_ENCRYPTION_KEYS": keys},
    )
    client = strict.client(admin.token)
    assert client.post(f"/webhooks/{hook_id}/test").status_code == 202
    flush(strict)
    [logged] = deliveries(client, hook_id)
    assert (logged["status"], logged["attempts"], logged["last_error"]) == ("pending", 1, "forbidden_address")
    assert logged["response_status"] is None
    assert receiver.of(path) == []
