"""Members: who adds, re-roles and removes whom; the last owner cannot leave (SPEC §7)."""

from __future__ import annotations

import uuid

import pytest

from tests.groups.factories import add_member, new_room, room_cast
from tests.support.gateway import Gateway


def _members(client: object, room_id: str) -> dict[str, str]:
    response = client.get(f"/working-groups/{room_id}/members")  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text
    return {m["user_id"]: m["role"] for m in response.json()["data"]}


@pytest.mark.parametrize("role", ["owner", "manager", "member", "viewer"])
def test_every_member_lists_the_members(gateway: Gateway, role: str) -> None:
    cast = room_cast(gateway)
    seen = _members(cast.role(role).client, cast.room_id)
    assert seen == {str(cast.role(r).id): r for r in ("owner", "manager", "member", "viewer")}


def test_member_listing_pages(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    first = cast.member.client.get(f"/working-groups/{cast.room_id}/members", params={"limit": 3}).json()
    rest = cast.member.client.get(
        f"/working-groups/{cast.room_id}/members", params={"limit": 3, "cursor": first["next_cursor"]}
    ).json()
    assert len(first["data"]) == 3 and rest["next_cursor"] is None
    assert len({m["user_id"] for m in first["data"] + rest["data"]}) == 4


@pytest.mark.parametrize(
    ("actor", "new_role", "status"),
    [
        ("owner", "owner", 201),
        ("owner", "manager", 201),
        ("manager", "manager", 201),
        ("manager", "viewer", 201),
        ("manager", "owner", 403),
        ("member", "member", 403),
        ("viewer", "viewer", 403),
    ],
)
def test_owners_and_managers_add_members_and_only_owners_add_owners(
    gateway: Gateway, actor: str, new_role: str, status: int
) -> None:
    cast = room_cast(gateway)
    newcomer = uuid.uuid4()
    response = cast.role(actor).client.post(
        f"/working-groups/{cast.room_id}/members", json={"user_id": str(newcomer), "role": new_role}
    )
    assert response.status_code == status, response.text
    members = _members(cast.owner.client, cast.room_id)
    assert members.get(str(newcomer)) == (new_role if status == 201 else None)


def test_an_added_member_sees_the_room_and_a_removed_one_no_longer_does(gateway: Gateway) -> None:
    owner, guest = gateway.user(), gateway.user()
    room = new_room(owner)
    add_member(owner, room["id"], guest.id, "member")
    assert guest.client.get(f"/working-groups/{room['id']}").json()["role"] == "member"
    assert [r["id"] for r in guest.client.get("/working-groups").json()["data"]] == [room["id"]]
    assert owner.client.delete(f"/working-groups/{room['id']}/members/{guest.id}").status_code == 204
    assert guest.client.get(f"/working-groups/{room['id']}").status_code == 404


def test_adding_someone_twice_is_a_409(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    response = cast.owner.client.post(
        f"/working-groups/{cast.room_id}/members", json={"user_id": str(cast.member.id), "role": "viewer"}
    )
    assert response.status_code == 409
    assert response.json()["code"] == "CONFLICT"
    assert _members(cast.owner.client, cast.room_id)[str(cast.member.id)] == "member"


@pytest.mark.parametrize(
    "body",
    [
        {"user_id": "nope", "role": "member"},
        {"user_id": str(uuid.uuid4()), "role": "admin"},
        {"role": "member"},
        {"user_id": str(uuid.uuid4()), "role": 3},
        {"user_id": str(uuid.uuid4()), "x": 1},
    ],
)
def test_bad_member_input_is_a_400_and_adds_no_one(gateway: Gateway, body: dict[str, object]) -> None:
    cast = room_cast(gateway)
    before = _members(cast.owner.client, cast.room_id)
    response = cast.owner.client.post(f"/working-groups/{cast.room_id}/members", json=body)
    assert response.status_code == 400, response.text
    assert _members(cast.owner.client, cast.room_id) == before


@pytest.mark.parametrize(
    ("actor", "target", "new_role", "status"),
    [
        ("owner", "manager", "owner", 200),
        ("owner", "member", "viewer", 200),
        ("manager", "member", "manager", 200),
        ("manager", "viewer", "member", 200),
        ("manager", "member", "owner", 403),
        ("manager", "owner", "member", 403),
        ("member", "viewer", "member", 403),
        ("viewer", "member", "viewer", 403),
    ],
)
def test_changing_a_role_follows_the_same_rules(
    gateway: Gateway, actor: str, target: str, new_role: str, status: int
) -> None:
    cast = room_cast(gateway)
    target_id = str(cast.role(target).id)
    response = cast.role(actor).client.patch(
        f"/working-groups/{cast.room_id}/members/{target_id}", json={"role": new_role}
    )
    assert response.status_code == status, response.text
    assert _members(cast.owner.client, cast.room_id)[target_id] == (new_role if status == 200 else target)


@pytest.mark.parametrize(
    ("actor", "target", "status"),
    [
        ("owner", "manager", 204),
        ("manager", "member", 204),
        ("manager", "viewer", 204),
        ("manager", "owner", 403),
        ("member", "viewer", 403),
        ("viewer", "member", 403),
        ("member", "member", 204),
        ("viewer", "viewer", 204),
        ("manager", "manager", 204),
    ],
)
def test_removing_members_and_leaving(gateway: Gateway, actor: str, target: str, status: int) -> None:
    cast = room_cast(gateway)
    target_id = str(cast.role(target).id)
    response = cast.role(actor).client.delete(f"/working-groups/{cast.room_id}/members/{target_id}")
    assert response.status_code == status, response.text
    assert (target_id in _members(cast.owner.client, cast.room_id)) is (status != 204)


def test_the_last_owner_cannot_leave_or_step_down(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    me = f"/working-groups/{cast.room_id}/members/{cast.owner.id}"
    for response in (cast.owner.client.delete(me), cast.owner.client.patch(me, json={"role": "manager"})):
        assert response.status_code == 409, response.text
        assert response.json()["code"] == "CONFLICT"
    assert _members(cast.owner.client, cast.room_id)[str(cast.owner.id)] == "owner"


def test_an_owner_may_leave_once_another_owner_exists(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    manager_path = f"/working-groups/{cast.room_id}/members/{cast.manager.id}"
    assert cast.owner.client.patch(manager_path, json={"role": "owner"}).status_code == 200
    assert (
        cast.owner.client.delete(f"/working-groups/{cast.room_id}/members/{cast.owner.id}").status_code == 204
    )
    assert cast.owner.client.get(f"/working-groups/{cast.room_id}").status_code == 404
    leave = cast.manager.client.delete(manager_path)
    assert leave.status_code == 409


def test_an_unknown_member_is_a_404(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    path = f"/working-groups/{cast.room_id}/members/{uuid.uuid4()}"
    for response in (cast.owner.client.patch(path, json={"role": "member"}), cast.owner.client.delete(path)):
        assert response.status_code == 404
        assert response.json()["code"] == "MEMBER_NOT_FOUND"


def test_outsiders_cannot_touch_members(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    client = cast.outsider.client
    base = f"/working-groups/{cast.room_id}/members"
    assert client.post(base, json={"user_id": str(cast.outsider.id), "role": "owner"}).status_code == 404
    assert client.patch(f"{base}/{cast.member.id}", json={"role": "viewer"}).status_code == 404
    assert client.delete(f"{base}/{cast.member.id}").status_code == 404
    assert _members(cast.owner.client, cast.room_id)[str(cast.member.id)] == "member"


def test_two_owners_leaving_at_once_leave_one_owner_behind(gateway: Gateway) -> None:
    from concurrent.futures import ThreadPoolExecutor

    for _ in range(3):
        cast = room_cast(gateway)
        path = f"/working-groups/{cast.room_id}/members/{cast.manager.id}"
        assert cast.owner.client.patch(path, json={"role": "owner"}).status_code == 200
        leavers = (cast.owner, cast.manager)
        with ThreadPoolExecutor(2) as pool:
            statuses = sorted(
                pool.map(
                    lambda u: u.client.delete(f"/working-groups/{cast.room_id}/members/{u.id}").status_code,
                    leavers,
                )
            )
        assert statuses == [204, 409]
        remaining = [u for u in leavers if u.client.get(f"/working-groups/{cast.room_id}").status_code == 200]
        assert len(remaining) == 1
        assert _members(remaining[0].client, cast.room_id)[str(remaining[0].id)] == "owner"
