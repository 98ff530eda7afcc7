"""The audit trail over HTTP: what an event says, secrets shown only as "rotated", filters, visibility."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

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


def test_a_room_owner_and_manager_see_the_rooms_events_and_nobody_else_does(gateway: Gateway) -> None:
    owner, manager, member, stranger = (gateway.user() for _ in range(4))
    room = owner.client.post("/working-groups", json={"name": "seen"}).json()["id"]
    for user, role in ((manager, "manager"), (member, "member")):
        body = {"user_id": str(user.id), "role": role}
        assert owner.client.post(f"/working-groups/{room}/members", json=body).status_code == 201
    assert owner.client.patch(f"/working-groups/{room}", json={"name": "renamed"}).status_code == 200
    other_room = stranger.client.post("/working-groups", json={"name": "not theirs"}).json()["id"]

    for user in (owner, manager):
        seen = user.client.get("/audit", params={"limit": 500}).json()["data"]
        assert {e["scope"]["room_id"] for e in seen} == {room}
        assert {"room.create", "room.update", "room_member.create"} <= {e["action"] for e in seen}
    assert member.client.get("/audit").json()["data"] == []
    stranger_sees = stranger.client.get("/audit", params={"limit": 500}).json()["data"]
    assert {e["scope"]["room_id"] for e in stranger_sees} == {other_room}


def test_an_economy_owner_sees_the_economys_events_and_an_admin_sees_everything(gateway: Gateway) -> None:
    admin, owner = gateway.user("Admin"), gateway.user()
    economy = admin.client.post("/economies", json={"slug": f"a-{uuid.uuid4().hex[:8]}", "name": "A"}).json()
    body = {"user_id": str(owner.id), "role": "owner"}
    assert admin.client.post(f"/economies/{economy['id']}/participants", json=body).status_code == 201
    assert admin.client.patch(f"/economies/{economy['id']}", json={"name": "B"}).status_code == 200
    seen = owner.client.get("/audit", params={"limit": 500}).json()["data"]
    assert {e["scope"]["economy_id"] for e in seen} == {economy["id"]}
    update = next(e for e in seen if e["action"] == "economy.update")
    assert update["changes"]["name"] == ["A", "B"]
    assert update["actor"] == {
        "user_id": str(admin.id),
        "role": "Admin",
        "auth_method": "jwt",
        "api_key_id": None,
        "delegation_token_id": None,
    }
    everything = events(gateway, target_id=economy["id"])
    assert {e["action"] for e in everything} >= {"economy.create", "economy.update"}


def test_filters_narrow_the_list_and_pages_follow_the_cursor(gateway: Gateway) -> None:
    user = gateway.user()
    rooms = [user.client.post("/working-groups", json={"name": f"r{n}"}).json()["id"] for n in range(5)]
    admin = gateway.user("Admin")
    mine = {"actor": str(user.id), "action": "room.create", "limit": 2}
    seen: list[str] = []
    cursor = None
    while True:
        page = admin.client.get("/audit", params={**mine, **({"cursor": cursor} if cursor else {})}).json()
        assert len(page["data"]) <= 2
        seen.extend(e["target"]["id"] for e in page["data"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(rooms))
    assert admin.client.get("/audit", params={"actor": str(user.id), "to": "2000-01-01"}).json()["data"] == []
    today = admin.client.get("/audit", params={"actor": str(user.id), "from": "2000-01-01"}).json()["data"]
    assert len(today) == 5 + 5  # each room's creation and its owner's membership


@pytest.mark.parametrize(
    "params",
    [
        {"from": "yesterday"},
        {"to": "2025-01-01T00:00:00"},
        {"from": "2025-02-01", "to": "2025-01-01"},
        {"limit": 0},
        {"limit": 501},
        {"limit": "ten"},
        {"cursor": "not-a-cursor!"},
        {"action": "x" * 201},
        {"target_id": ""},
    ],
)
def test_a_bad_filter_is_a_400_in_the_documented_shape(gateway: Gateway, params: dict[str, Any]) -> None:
    response = gateway.user("Admin").client.get("/audit", params=params)
    assert response.status_code in (400, 422), response.text
    body = response.json()
    assert {"error", "code"} <= set(body)
    assert isinstance(body["error"], str)
    assert body["code"] in ("BAD_REQUEST", "VALIDATION_FAILED")


def test_a_delegation_token_may_not_read_the_trail(gateway: Gateway) -> None:
    owner = gateway.user()
    room = owner.client.post("/working-groups", json={"name": "d"}).json()["id"]
    token = gateway.tokens.delegation(sub=owner.id, room_id=uuid.UUID(room), scope=["manage"])
    assert gateway.client(token).get("/audit").status_code == 403
