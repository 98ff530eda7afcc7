"""The audit trail over HTTP: what an event says, secrets shown only as "rotated", filters, visibility."""

from __future__ import annotations

import uuid
from typing import Any

from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER


def events(gateway: Gateway, **params: Any) -> list[dict[str, Any]]:
    admin = gateway.user("Admin")
    response = admin.client.get("/audit", params={"limit": 500, **params})
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def test_a_credential_created_and_rotated_leaves_two_events_with_the_secret_shown_as_rotated(
    gateway: Gateway,
) -> None:
    owner = gateway.user()
    secret = RECORDER.remember_secret("sk-" + uuid.uuid4().hex)
    created = owner.client.post(
        "/llm-credentials",
        json={"provider": "openai", "secret": secret, "label": "mine", "scope": "user"},
        headers={"x-request-id": "audit-create-1"},
    )
    assert created.status_code == 201, created.text
    credential_id = created.json()["id"]
    new_secret = RECORDER.remember_secret("sk-" + uuid.uuid4().hex)
    patched = owner.client.patch(f"/llm-credentials/{credential_id}", json={"secret": new_secret})
    assert patched.status_code == 200, patched.text

    found = events(gateway, target_type="credential", target_id=credential_id)
    assert [e["action"] for e in found] == ["credential.rotate", "credential.create"]
    rotate, create = found
    assert create["actor"]["user_id"] == str(owner.id)
    assert create["actor"]["role"] == "User"
    assert create["request_id"] == "audit-create-1"
    assert create["ip"] == "127.0.0.1"
    assert create["changes"]["sealed_secret"] == [None, "rotated"]
    assert create["changes"]["label"] == [None, "mine"]
    assert rotate["changes"]["sealed_secret"] == ["rotated", "rotated"]
    assert rotate["changes"]["secret_hint"] == [secret[-4:], new_secret[-4:]]
    assert rotate["prev_hash"] != rotate["hash"]
