"""Deliveries follow Standard Webhooks, are logged, and are retried with the same webhook-id (SPEC §22)."""

from __future__ import annotations

from datetime import datetime

from standardwebhooks import Webhook

from tests.fakes.webhook_receiver import WebhookReceiver
from tests.support.gateway import Gateway, User
from tests.webhooks.conftest import create_webhook, deliveries, flush


def test_a_test_event_arrives_signed_as_standard_webhooks_says(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["limit.refused"])
    queued = admin.client.post(f"/webhooks/{hook['id']}/test")
    assert queued.status_code == 202, queued.text
    [delivery] = receiver.wait_for(hook["path"], 1)
    assert delivery.verified
    # The reference package verifies it, and its own signature over the same parts is the one sent.
    Webhook(hook["secret"]).verify(delivery.body, delivery.headers)
    assert delivery.message_id == queued.json()["id"]
    assert delivery.message_id.startswith("msg_")
    event = delivery.event
    assert set(event) == {"type", "timestamp", "data"}
    assert event["type"] == "webhook.test"
    assert datetime.fromisoformat(event["timestamp"]).tzinfo is not None
    assert event["data"]["webhook_id"] == hook["id"]
    assert delivery.headers["content-type"] == "application/json"
    flush(hooks_gateway)
    [logged] = deliveries(admin.client, hook["id"])
    assert logged["id"] == delivery.message_id
    assert (logged["status"], logged["attempts"], logged["response_status"]) == ("delivered", 1, 200)
    assert logged["last_error"] is None and logged["next_attempt_at"] is None


def test_a_wrong_secret_does_not_verify(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    """The receiver's check can fail: a delivery checked under another webhook's secret is refused."""
    first = create_webhook(hooks_gateway.url, admin, receiver, ["limit.refused"])
    second = create_webhook(hooks_gateway.url, admin, receiver, ["limit.refused"])
    receiver.secrets[first["path"]] = second["secret"]
    admin.client.post(f"/webhooks/{first['id']}/test")
    [delivery] = receiver.wait_for(first["path"], 1)
    assert not delivery.verified


def test_a_failed_attempt_is_retried_with_the_same_webhook_id(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["limit.refused"])
    receiver.statuses[hook["path"]] = [500]
    admin.client.post(f"/webhooks/{hook['id']}/test")
    first, second = receiver.wait_for(hook["path"], 2)
    assert (first.answered, second.answered) == (500, 200)
    assert first.message_id == second.message_id
    assert first.body == second.body
    assert first.verified and second.verified
    flush(hooks_gateway)
    [logged] = deliveries(admin.client, hook["id"])
    assert (logged["status"], logged["attempts"], logged["response_status"]) == ("delivered", 2, 200)


def test_a_failing_receiver_leaves_the_delivery_pending_with_its_error(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["limit.refused"])
    receiver.statuses[hook["path"]] = [503] * 1000
    admin.client.post(f"/webhooks/{hook['id']}/test")
    receiver.wait_for(hook["path"], 2)
    flush(hooks_gateway)
    [logged] = deliveries(admin.client, hook["id"])
    assert logged["status"] == "pending"
    assert logged["attempts"] >= 2
    assert (logged["last_error"], logged["response_status"]) == ("non_2xx", 503)
    assert logged["next_attempt_at"] is not None
    assert deliveries(admin.client, hook["id"], status="delivered") == []
    # Deleting the webhook ends its retries with it.
    assert admin.client.delete(f"/webhooks/{hook['id']}").status_code == 204
