"""The /webhooks API (SPEC §22): who may manage which webhook, the secret shown once, lists paged."""

from __future__ import annotations

import uuid

import pytest

from tests.fakes.webhook_receiver import WebhookReceiver
from tests.limits.conftest import join_economy, new_economy
from tests.support.gateway import Gateway, User
from tests.webhooks.conftest import create_webhook, new_path, post_webhook


def test_the_secret_is_shown_once_and_never_again(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["budget.threshold", "limit.refused"])
    assert hook["secret"].startswith("whsec_")
    assert hook["events"] == ["budget.threshold", "limit.refused"]
    assert (hook["economy_id"], hook["active"]) == (None, True)
    shown = admin.client.get(f"/webhooks/{hook['id']}")
    assert shown.status_code == 200
    assert "secret" not in shown.json()
    assert hook["secret"] not in shown.text
    listed = admin.client.get("/webhooks", params={"limit": 500}).json()["data"]
    assert hook["id"] in [item["id"] for item in listed]
    assert all("secret" not in item for item in listed)


def test_the_secret_is_stored_encrypted(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["audit.event"])

    async def stored() -> bytes:
        from switchboard.webhooks.models import WebhookRow

        async with hooks_gateway.app.state.sessionmaker() as session:
            row = await session.get(WebhookRow, uuid.UUID(hook["id"]))
            assert row is not None
            return bytes(row.sealed_secret)

    sealed = hooks_gateway.server.call_soon(stored())
    secret = hook["secret"].encode()
    assert secret not in sealed and secret.removeprefix(b"whsec_") not in sealed


def test_patch_changes_url_events_and_active_and_delete_removes(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    hook = create_webhook(hooks_gateway.url, admin, receiver, ["audit.event"])
    changed = admin.client.patch(
        f"/webhooks/{hook['id']}",
        json={"url": receiver.base_url + new_path(), "events": ["limit.refused"], "active": False},
    )
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["events"], body["active"]) == (["limit.refused"], False)
    assert body["updated_at"] >= hook["updated_at"]
    assert admin.client.patch(f"/webhooks/{hook['id']}", json={"events": None}).status_code == 400
    assert admin.client.delete(f"/webhooks/{hook['id']}").status_code == 204
    assert admin.client.get(f"/webhooks/{hook['id']}").status_code == 404
    assert admin.client.delete(f"/webhooks/{hook['id']}").status_code == 404


def test_lists_are_paged(hooks_gateway: Gateway, receiver: WebhookReceiver) -> None:
    admin = hooks_gateway.user(role="Admin")
    economy = new_economy(admin)
    made = [
        create_webhook(hooks_gateway.url, admin, receiver, ["audit.event"], economy_id=economy["id"])["id"]
        for _ in range(3)
    ]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, "economy_id": economy["slug"], **({"cursor": cursor} if cursor else {})}
        page = admin.client.get("/webhooks", params=params).json()
        seen.extend(item["id"] for item in page["data"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == made


def test_an_economy_owner_manages_only_that_economys_webhooks(
    hooks_gateway: Gateway, admin: User, receiver: WebhookReceiver
) -> None:
    economy = new_economy(admin)
    other = new_economy(admin)
    owner = hooks_gateway.user()
    member = hooks_gateway.user()
    join_economy(admin, economy["id"], owner, role="owner")
    join_economy(admin, economy["id"], member)
    mine = create_webhook(
        hooks_gateway.url, owner, receiver, ["budget.threshold"], economy_id=economy["slug"]
    )
    assert mine["economy_id"] == economy["id"]
    theirs = create_webhook(hooks_gateway.url, admin, receiver, ["budget.threshold"], economy_id=other["id"])
    everything = create_webhook(hooks_gateway.url, admin, receiver, ["budget.threshold"])
    listed = [item["id"] for item in owner.client.get("/webhooks").json()["data"]]
    assert listed == [mine["id"]]
    for hidden in (theirs, everything):
        assert owner.client.get(f"/webhooks/{hidden['id']}").status_code == 404
        assert owner.client.delete(f"/webhooks/{hidden['id']}").status_code == 404
        assert owner.client.get(f"/webhooks/{hidden['id']}/deliveries").status_code == 404
    body = {"url": receiver.base_url + new_path(), "events": ["budget.threshold"]}
    # Not an owner of `other`: as if it did not exist; a member of `economy`: forbidden; no economy:
    # Admins only.
    assert post_webhook(hooks_gateway.url, owner, {**body, "economy_id": other["id"]}).status_code == 404
    assert post_webhook(hooks_gateway.url, member, {**body, "economy_id": economy["id"]}).status_code == 403
    assert post_webhook(hooks_gateway.url, owner, body).status_code == 403
    assert member.client.get(f"/webhooks/{mine['id']}").status_code == 404


@pytest.mark.parametrize("role", ["Viewer", "User"])
def test_only_admins_add_webhooks_for_every_economy(
    hooks_gateway: Gateway, receiver: WebhookReceiver, role: str
) -> None:
    user = hooks_gateway.user(role=role)
    response = post_webhook(
        hooks_gateway.url, user, {"url": receiver.base_url + new_path(), "events": ["audit.event"]}
    )
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN"
