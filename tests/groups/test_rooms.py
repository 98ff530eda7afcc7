"""Rooms: create, list mine, read, change, delete, with the access rules of SPEC §2 and §7."""

from __future__ import annotations

import uuid

import pytest

from tests.groups.factories import add_member, new_room, room_cast
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER


def test_creating_a_room_makes_the_creator_its_owner_and_stores_the_economy_as_given(
    gateway: Gateway,
) -> None:
    owner = gateway.user()
    economy = uuid.uuid4()
    room = new_room(owner, name="  Ops  ", description="on call", default_economy_id=str(economy))
    assert room["name"] == "Ops"
    assert room["role"] == "owner"
    assert room["default_economy_id"] == str(economy)
    assert room["created_by"] == str(owner.id)
    members = owner.client.get(f"/working-groups/{room['id']}/members").json()["data"]
    assert [(m["user_id"], m["role"]) for m in members] == [(str(owner.id), "owner")]
    assert owner.client.get(f"/working-groups/{room['id']}").json() == room


@pytest.mark.parametrize(
    ("role", "permissions", "status"),
    [
        ("User", None, 201),
        ("Operator", None, 201),
        ("Admin", [], 201),
        ("SuperAdmin", [], 201),
        ("User", [], 403),
        ("ApiClient", None, 403),
        ("ApiClient", ["CreateGroup"], 201),
        ("Viewer", None, 403),
        ("Viewer", ["CreateGroup"], 403),
    ],
)
def test_creating_a_room_needs_create_group_or_admin_and_a_writer(
    gateway: Gateway, role: str, permissions: list[str] | None, status: int
) -> None:
    user = gateway.user(role, permissions=permissions)
    response = user.client.post("/working-groups", json={"name": "x"})
    assert response.status_code == status, response.text
    if status == 403:
        assert response.json()["code"] == "FORBIDDEN"
        assert user.client.get("/working-groups").json()["data"] == []


def test_listing_rooms_shows_only_mine_in_pages(gateway: Gateway) -> None:
    me, other = gateway.user(), gateway.user()
    mine = [new_room(me, name=f"r{i}")["id"] for i in range(3)]
    new_room(other, name="not mine")
    first = me.client.get("/working-groups", params={"limit": 2}).json()
    assert len(first["data"]) == 2 and first["next_cursor"]
    second = me.client.get("/working-groups", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert second["next_cursor"] is None
    assert [r["id"] for r in first["data"] + second["data"]] == mine


@pytest.mark.parametrize(
    "params", [{"limit": 0}, {"limit": 501}, {"limit": "many"}, {"cursor": "!!!"}, {"cursor": "WyJ4Il0"}]
)
def test_bad_paging_parameters_are_a_400(gateway: Gateway, params: dict[str, object]) -> None:
    response = gateway.user().client.get("/working-groups", params=params)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "VALIDATION_FAILED"


def test_a_room_i_am_not_in_is_a_404_like_one_that_does_not_exist(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    outsider = cast.outsider.client
    for path in (f"/working-groups/{cast.room_id}", f"/working-groups/{uuid.uuid4()}"):
        response = outsider.get(path)
        assert response.status_code == 404
        assert response.json() == {"error": "working group not found", "code": "GROUP_NOT_FOUND"}
    assert outsider.patch(f"/working-groups/{cast.room_id}", json={"name": "mine"}).status_code == 404
    assert outsider.delete(f"/working-groups/{cast.room_id}").status_code == 404
    assert outsider.get(f"/working-groups/{cast.room_id}/members").status_code == 404


@pytest.mark.parametrize(
    ("role", "status"), [("owner", 200), ("manager", 200), ("member", 403), ("viewer", 403)]
)
def test_owners_and_managers_change_a_room(gateway: Gateway, role: str, status: int) -> None:
    cast = room_cast(gateway)
    client = cast.role(role).client
    response = client.patch(f"/working-groups/{cast.room_id}", json={"name": "Renamed", "description": None})
    assert response.status_code == status, response.text
    seen = cast.owner.client.get(f"/working-groups/{cast.room_id}").json()
    assert seen["name"] == ("Renamed" if status == 200 else "Research")
    assert client.get(f"/working-groups/{cast.room_id}").json()["role"] == role


def test_patch_changes_only_the_fields_given(gateway: Gateway) -> None:
    owner = gateway.user()
    economy = str(uuid.uuid4())
    room = new_room(owner, description="keep me", default_economy_id=economy)
    changed = owner.client.patch(f"/working-groups/{room['id']}", json={"name": "New"}).json()
    assert (changed["name"], changed["description"], changed["default_economy_id"]) == (
        "New",
        "keep me",
        economy,
    )
    cleared = owner.client.patch(f"/working-groups/{room['id']}", json={"default_economy_id": None}).json()
    assert cleared["default_economy_id"] is None and cleared["description"] == "keep me"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": 5},
        {"name": "ok", "description": ["a"]},
        {"name": "ok", "default_economy_id": "not-a-uuid"},
        {"name": "ok", "default_economy_id": 7},
        {"name": "ok", "colour": "red"},
    ],
)
def test_bad_room_input_is_a_400_and_creates_nothing(gateway: Gateway, body: dict[str, object]) -> None:
    user = gateway.user()
    response = user.client.post("/working-groups", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "VALIDATION_FAILED"
    assert user.client.get("/working-groups").json()["data"] == []


def test_malformed_json_is_a_400(gateway: Gateway) -> None:
    user = gateway.user()
    response = user.client.post(
        "/working-groups", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert user.client.get("/working-groups").json()["data"] == []


@pytest.mark.parametrize("body", [{"name": None}, {"name": ""}, {"default_economy_id": "x"}, {"owner": "me"}])
def test_bad_room_changes_are_a_400_and_change_nothing(gateway: Gateway, body: dict[str, object]) -> None:
    owner = gateway.user()
    room = new_room(owner)
    response = owner.client.patch(f"/working-groups/{room['id']}", json=body)
    assert response.status_code == 400, response.text
    assert owner.client.get(f"/working-groups/{room['id']}").json() == room


@pytest.mark.parametrize(
    ("role", "status"), [("owner", 204), ("manager", 403), ("member", 403), ("viewer", 403)]
)
def test_only_owners_delete_a_room(gateway: Gateway, role: str, status: int) -> None:
    cast = room_cast(gateway)
    response = cast.role(role).client.delete(f"/working-groups/{cast.room_id}")
    assert response.status_code == status, response.text
    after = cast.owner.client.get(f"/working-groups/{cast.room_id}")
    assert after.status_code == (404 if status == 204 else 200)


def test_deleting_a_room_removes_its_members_and_credentials(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    created = cast.owner.client.post(
        "/llm-credentials",
        json={
            "provider": "openai",
            "secret": RECORDER.remember_secret("sk-room-" + uuid.uuid4().hex),
            "room_id": cast.room_id,
        },
    )
    assert created.status_code == 201, created.text
    assert cast.owner.client.delete(f"/working-groups/{cast.room_id}").status_code == 204
    assert cast.member.client.get("/working-groups").json()["data"] == []
    assert cast.owner.client.get(f"/llm-credentials/{created.json()['id']}").status_code == 404


def test_platform_viewer_member_reads_but_cannot_change_a_room(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    reader = gateway.user("Viewer")
    add_member(cast.owner, cast.room_id, reader.id, "manager")
    assert reader.client.get(f"/working-groups/{cast.room_id}").status_code == 200
    assert reader.client.patch(f"/working-groups/{cast.room_id}", json={"name": "no"}).status_code == 403
    assert reader.client.delete(f"/working-groups/{cast.room_id}").status_code == 403
