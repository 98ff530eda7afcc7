"""The events (SPEC §22): budget.threshold once per threshold per window, the first limit.refused per
limit per window, credential.rejected, audit.event; each to the webhooks of its economy and to Admins'."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.fakes.webhook_receiver import WebhookReceiver
from tests.limits.conftest import create_limit, join_economy, new_economy
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER
from tests.webhooks.conftest import PRICED, create_webhook, flush

MESSAGES = [{"role": "user", "content": "x"}]


@pytest.fixture()
def member(hooks_gateway: Gateway, admin: User, fake_provider: Any) -> tuple[User, dict[str, Any]]:
    """A user with an OpenAI key on the fake provider, taking part in an economy of their own."""
    economy = new_economy(admin)
    user = hooks_gateway.user()
    join_economy(admin, economy["id"], user)
    add_key(user, fake_provider, f"sk-openai-{uuid.uuid4().hex}")
    return user, economy


def add_key(user: User, fake_provider: Any, secret: str) -> str:
    RECORDER.remember_secret(secret)
    body = {"provider": "openai", "secret": secret, "base_url": f"{fake_provider.base_url}/v1"}
    response = user.client.post("/llm-credentials", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def call(user: User, economy: dict[str, Any], model: str = f"openai/{PRICED}") -> int:
    response = user.client.post(
        "/v1/chat/completions",
        json={"model": model, "messages": MESSAGES},
        headers={"x-economy-id": economy["id"]},
    )
    return response.status_code


def of_type(deliveries: list[Any], event_type: str) -> list[dict[str, Any]]:
    return [d.event for d in deliveries if d.event["type"] == event_type]


def test_budget_thresholds_fire_once_each_and_the_first_refusal_once(
    hooks_gateway: Gateway,
    admin: User,
    receiver: WebhookReceiver,
    fake_provider: Any,
    member: tuple[User, dict[str, Any]],
) -> None:
    user, economy = member
    events = ["budget.threshold", "limit.refused"]
    hook = create_webhook(hooks_gateway.url, admin, receiver, events, economy_id=economy["id"])
    elsewhere = create_webhook(
        hooks_gateway.url, admin, receiver, events, economy_id=new_economy(admin)["id"]
    )
    limit = create_limit(
        admin.client,
        subject_type="user",
        subject_id=str(user.id),
        economy_id=economy["id"],
        metric="cost",
        window="day",
        amount="200000",
    )
    flush(hooks_gateway)  # the new subscriptions, before the first call
    # 100 tokens at 1,000 nano-units each: half the amount a call.
    fake_provider.script(PRICED, prompt_tokens=60, completion_tokens=40)
    assert call(user, economy) == 200  # 50 %
    assert call(user, economy) == 200  # 100 %: 80 and 100 at once
    assert call(user, economy) == 402
    assert call(user, economy) == 402
    receiver.wait_for(hook["path"], 4)
    flush(hooks_gateway)
    received = receiver.of(hook["path"])
    assert all(d.verified for d in received)
    thresholds = of_type(received, "budget.threshold")
    assert sorted(e["data"]["threshold"] for e in thresholds) == [50, 80, 100]
    first = min(thresholds, key=lambda e: e["data"]["threshold"])["data"]
    assert first["limit"]["id"] == limit["id"]
    assert (first["limit"]["metric"], first["limit"]["window"], first["amount"]) == ("cost", "day", "200000")
    # What `used` was when the dispatcher looked: the second call may have settled by then.
    assert int(first["used"]) >= 100000
    [refused] = of_type(received, "limit.refused")
    assert refused["data"]["limit"]["id"] == limit["id"]
    assert refused["data"]["code"] == "budget_exceeded"
    assert refused["data"]["user_id"] == str(user.id)
    assert len(received) == 4
    assert receiver.of(elsewhere["path"]) == []


def test_a_rejected_stored_key_is_an_event_once_an_hour(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver, fake_provider: Any
) -> None:
    economy = new_economy(admin)
    user = hooks_gateway.user()
    join_economy(admin, economy["id"], user)
    credential_id = add_key(user, fake_provider, f"sk-fake-reject-{uuid.uuid4().hex}")
    hook = create_webhook(
        hooks_gateway.url, admin, receiver, ["credential.rejected"], economy_id=economy["id"]
    )
    flush(hooks_gateway)
    model = f"openai/m-{uuid.uuid4().hex[:8]}"
    assert call(user, economy, model) == 424
    assert call(user, economy, model) == 424
    [delivery] = receiver.wait_for(hook["path"], 1)
    flush(hooks_gateway)
    assert len(receiver.of(hook["path"])) == 1
    data = delivery.event["data"]
    assert delivery.event["type"] == "credential.rejected"
    assert (data["credential_id"], data["scope"], data["provider"]) == (credential_id, "user", "openai")
    assert data["economy_id"] == economy["id"]
    assert "sk-fake-reject" not in delivery.body.decode()


def test_audit_events_reach_their_economys_and_admins_webhooks(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    """A change through the API (an economy renamed) is one `audit.event`, queued in the change's own
    transaction, to the webhooks of that economy and to Admins' that subscribe to it; its data is the
    event as GET /audit shows it, chain hash included."""
    economy = new_economy(admin)
    theirs = create_webhook(hooks_gateway.url, admin, receiver, ["audit.event"], economy_id=economy["id"])
    not_subscribed = create_webhook(
        hooks_gateway.url, admin, receiver, ["limit.refused"], economy_id=economy["id"]
    )
    admins = create_webhook(hooks_gateway.url, admin, receiver, ["audit.event"])
    other = create_webhook(
        hooks_gateway.url, admin, receiver, ["audit.event"], economy_id=new_economy(admin)["id"]
    )
    marker = f"renamed-{uuid.uuid4().hex}"
    renamed = admin.client.patch(f"/economies/{economy['id']}", json={"name": marker})
    assert renamed.status_code == 200, renamed.text
    listed = admin.client.get("/audit", params={"target_id": economy["id"]}).json()["data"]
    [stored] = [event for event in listed if event["action"] == "economy.update"]
    for hook in (theirs, admins):
        [delivery] = receiver.wait_for(hook["path"], 1, containing=marker)
        assert delivery.event["type"] == "audit.event"
        assert delivery.event["data"]["changes"]["name"][1] == marker
        assert delivery.event["data"]["hash"] == stored["hash"]
    flush(hooks_gateway)
    for hook in (not_subscribed, other):
        assert [d for d in receiver.of(hook["path"]) if marker in d.body.decode()] == []


def test_an_inactive_webhook_receives_nothing_new(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    economy = new_economy(admin)
    hook = create_webhook(
        hooks_gateway.url, admin, receiver, ["audit.event"], economy_id=economy["id"], active=False
    )
    renamed = admin.client.patch(f"/economies/{economy['id']}", json={"name": "renamed"})
    assert renamed.status_code == 200, renamed.text
    # A test event still goes to it (to try a webhook before switching it on): the sync point.
    admin.client.post(f"/webhooks/{hook['id']}/test")
    receiver.wait_for(hook["path"], 1)
    flush(hooks_gateway)
    assert [d.event["type"] for d in receiver.of(hook["path"])] == ["webhook.test"]
