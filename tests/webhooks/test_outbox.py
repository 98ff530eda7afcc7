"""The outbox survives a restart, and the egress guard is asked on every connect (SPEC §22, §21)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import GatewayFactory
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway, User
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
    hook = create_webhook(first.url, admin, receiver, ["limit.refused"])
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
        lenient.url, admin, {"url": f"https://127.0.0.1:{port}{path}", "events": ["limit.refused"]}
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


def test_the_purge_keeps_what_is_pending_recent_or_of_a_total_window(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["limit.refused"])
    old = datetime.now(UTC) - timedelta(days=45)
    ids = {name: uuid.uuid4() for name in ("old_done", "old_pending", "recent_done")}
    subject = uuid.uuid4().hex

    async def seed_then_purge() -> tuple[set[uuid.UUID], set[datetime]]:
        from sqlalchemy import insert, select

        from switchboard.limits.rules import EPOCH
        from switchboard.webhooks.models import DeliveryRow, EventMarkRow

        rows = [
            (ids["old_done"], "delivered", old),
            (ids["old_pending"], "pending", old),
            (ids["recent_done"], "failed", datetime.now(UTC)),
        ]
        async with hooks_gateway.app.state.sessionmaker() as session, session.begin():
            for row_id, status, at in rows:
                await session.execute(
                    insert(DeliveryRow).values(
                        id=row_id,
                        webhook_id=uuid.UUID(hook["id"]),
                        event_type="audit.event",
                        body="{}",
                        status=status,
                        attempts=1,
                        next_attempt_at=at + timedelta(days=400) if status == "pending" else None,
                        created_at=at,
                    )
                )
            for window in (EPOCH, old, datetime.now(UTC)):
                await session.execute(
                    insert(EventMarkRow).values(
                        event_type="limit.refused",
                        subject=subject,
                        window_start=window,
                        threshold=0,
                        created_at=old,
                    )
                )
        await hooks_gateway.app.state.webhook_dispatcher.purge()
        async with hooks_gateway.app.state.sessionmaker() as session:
            kept = set(await session.scalars(select(DeliveryRow.id).where(DeliveryRow.id.in_(ids.values()))))
            windows = set(
                await session.scalars(
                    select(EventMarkRow.window_start).where(EventMarkRow.subject == subject)
                )
            )
        return kept, windows

    kept, windows = hooks_gateway.server.call_soon(seed_then_purge())
    assert kept == {ids["old_pending"], ids["recent_done"]}
    assert len(windows) == 2 and old not in windows
