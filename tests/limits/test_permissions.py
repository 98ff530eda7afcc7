"""Who may manage which limit (SPEC §13), and that a limit the caller may not manage is a 404."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.limits.conftest import (
    AGENT_ID,
    create_limit,
    issue_api_key,
    join_economy,
    join_room,
    limit_body,
    new_economy,
    new_room,
)
from tests.support.gateway import Gateway, User


def refused(user: User, status: int, **fields: Any) -> None:
    response = user.client.post("/limits", json=limit_body(**fields))
    assert response.status_code == status, response.text
    assert response.json()["code"] in ("FORBIDDEN", "NOT_FOUND", "GROUP_NOT_FOUND")


def manages(user: User, limit: dict[str, Any]) -> bool:
    """GET, status, PATCH and DELETE agree: all 200/204, or all 404 (PATCH and DELETE leave it as it was)."""
    path = f"/limits/{limit['id']}"
    got = user.client.get(path).status_code
    status = user.client.get(f"{path}/status").status_code
    patched = user.client.patch(path, json={"amount": limit["amount"]}).status_code
    assert {got, status, patched} in ({200}, {404}), (got, status, patched)
    return got == 200


@pytest.mark.parametrize("role", ["Admin", "SuperAdmin"])
def test_admins_limit_any_subject(limits_gateway: Gateway, role: str) -> None:
    admin = limits_gateway.user(role=role)
    owner = limits_gateway.user()
    economy = new_economy(admin)
    room = new_room(owner)
    key_id = issue_api_key(limits_gateway, owner)
    subjects = [
        ("economy", economy["slug"]),
        ("user", str(owner.id)),
        ("room", room),
        ("agent", AGENT_ID),
        ("api_key", key_id),
    ]
    for subject_type, subject_id in subjects:
        made = create_limit(admin.client, subject_type=subject_type, subject_id=subject_id, economy_id=None)
        assert manages(admin, made)
        assert admin.client.delete(f"/limits/{made['id']}").status_code == 204


def test_an_economy_owner_limits_the_economy_and_anything_narrowed_to_it(
    limits_gateway: Gateway, admin: User
) -> None:
    economy = new_economy(admin)
    owner, member = limits_gateway.user(), limits_gateway.user()
    join_economy(admin, economy["id"], owner, "owner")
    room = new_room(member)
    key_id = issue_api_key(limits_gateway, member)
    own = create_limit(owner.client, subject_type="economy", subject_id=economy["slug"], metric="cost")
    narrowed = [
        create_limit(owner.client, subject_type=kind, subject_id=subject, economy_id=economy["slug"])
        for kind, subject in (
            ("user", str(member.id)),
            ("user", str(owner.id)),  # themselves too: the economy is theirs
            ("room", room),
            ("agent", AGENT_ID),
            ("api_key", key_id),
        )
    ]
    for limit in [own, *narrowed]:
        assert manages(owner, limit)
    listed = owner.client.get("/limits").json()["data"]
    assert [item["id"] for item in listed] == [limit["id"] for limit in [own, *narrowed]]
    assert owner.client.delete(f"/limits/{own['id']}").status_code == 204


def test_an_economy_owner_may_not_limit_outside_their_economy(limits_gateway: Gateway, admin: User) -> None:
    mine, member_of, stranger_to = new_economy(admin), new_economy(admin), new_economy(admin)
    owner, other = limits_gateway.user(), limits_gateway.user()
    join_economy(admin, mine["id"], owner, "owner")
    join_economy(admin, member_of["id"], owner, "member")
    refused(owner, 403, subject_type="user", subject_id=str(other.id))  # not narrowed
    refused(owner, 403, subject_type="economy", subject_id=member_of["id"])
    refused(owner, 403, subject_type="user", subject_id=str(other.id), economy_id=member_of["id"])
    refused(owner, 404, subject_type="economy", subject_id=stranger_to["id"])
    refused(owner, 404, subject_type="user", subject_id=str(other.id), economy_id=stranger_to["slug"])
    theirs = create_limit(admin.client, subject_type="economy", subject_id=member_of["id"])
    narrowed_elsewhere = create_limit(
        admin.client, subject_type="user", subject_id=str(owner.id), economy_id=member_of["id"]
    )
    assert not manages(owner, theirs) and not manages(owner, narrowed_elsewhere)
    assert owner.client.delete(f"/limits/{theirs['id']}").status_code == 404


@pytest.mark.parametrize(
    ("role", "status"), [("owner", 201), ("manager", 201), ("member", 403), ("viewer", 403)]
)
def test_room_owners_and_managers_limit_their_room_members_may_not(
    limits_gateway: Gateway, admin: User, role: str, status: int
) -> None:
    owner = limits_gateway.user()
    room = new_room(owner)
    user = owner if role == "owner" else limits_gateway.user()
    if role != "owner":
        join_room(owner, room, user, role)
    response = user.client.post("/limits", json=limit_body(subject_type="room", subject_id=room))
    assert response.status_code == status, response.text
    if status == 201:
        assert manages(user, response.json())
    # An Admin's limit on the room: theirs to see, not to change (tests/limits/test_authority.py).
    made = create_limit(admin.client, subject_type="room", subject_id=room, window="month")
    assert user.client.get(f"/limits/{made['id']}").status_code == (200 if status == 201 else 404)


def test_a_room_limit_is_404_to_someone_outside_the_room(limits_gateway: Gateway, admin: User) -> None:
    room = new_room(limits_gateway.user())
    outsider = limits_gateway.user()
    response = outsider.client.post("/limits", json=limit_body(subject_type="room", subject_id=room))
    assert response.status_code == 404
    assert response.json()["code"] == "GROUP_NOT_FOUND"
    assert not manages(outsider, create_limit(admin.client, subject_type="room", subject_id=room))
    assert outsider.client.get("/limits").json()["data"] == []


def test_a_room_manager_lists_their_rooms_limits_only(limits_gateway: Gateway, admin: User) -> None:
    owner, manager = limits_gateway.user(), limits_gateway.user()
    room, other_room = new_room(owner), new_room(owner)
    join_room(owner, room, manager, "manager")
    made = create_limit(manager.client, subject_type="room", subject_id=room)
    narrowed = create_limit(
        manager.client, subject_type="room", subject_id=room, economy_id=new_economy(admin)["id"]
    )
    create_limit(owner.client, subject_type="room", subject_id=other_room)
    listed = manager.client.get("/limits").json()["data"]
    assert [item["id"] for item in listed] == [made["id"], narrowed["id"]]


def test_a_plain_user_may_not_limit_themselves_or_anyone(limits_gateway: Gateway, admin: User) -> None:
    user, other = limits_gateway.user(), limits_gateway.user()
    response = user.client.post("/limits", json=limit_body(subject_type="user", subject_id=str(user.id)))
    assert response.status_code == 403
    assert "yourself" in response.json()["error"]
    refused(user, 403, subject_type="user", subject_id=str(other.id))
    refused(user, 403, subject_type="agent", subject_id=AGENT_ID)
    refused(user, 403, subject_type="api_key", subject_id=issue_api_key(limits_gateway, user))
    refused(user, 403, subject_type="economy", subject_id="default")  # a member of default, not an owner
    on_me = create_limit(admin.client, subject_type="user", subject_id=str(user.id))
    assert not manages(user, on_me)
    assert user.client.delete(f"/limits/{on_me['id']}").status_code == 404
    assert user.client.get("/limits").json() == {"data": [], "next_cursor": None}
    # They still see it among their own limits.
    assert [item["id"] for item in user.client.get("/usage/me/limits").json()["data"]] == [on_me["id"]]


def test_viewers_and_read_scoped_delegation_tokens_may_not_change_limits(
    limits_gateway: Gateway, admin: User
) -> None:
    owner = limits_gateway.user()
    room = new_room(owner)
    viewer = limits_gateway.user(role="Viewer")
    refused(viewer, 403, subject_type="room", subject_id=room)
    made = create_limit(owner.client, subject_type="room", subject_id=room)
    for scope, status in (("read", 403), ("write", 403), ("manage", 200)):
        token = limits_gateway.tokens.delegation(sub=owner.id, room_id=uuid.UUID(room), scope=[scope])
        delegated = limits_gateway.client(token)
        assert delegated.get(f"/limits/{made['id']}").status_code == 200
        patched = delegated.patch(f"/limits/{made['id']}", json={"amount": "9"})
        assert patched.status_code == status, (scope, patched.text)
    other_room = new_room(owner)
    token = limits_gateway.tokens.delegation(sub=owner.id, room_id=uuid.UUID(room), scope=["manage"])
    acting_for_room = limits_gateway.client(token)
    other = acting_for_room.post("/limits", json=limit_body(subject_type="room", subject_id=other_room))
    assert other.status_code == 404  # a delegation token acts for its room and no other


def test_config_and_budget_limits_cannot_be_changed_over_the_api(admin: User) -> None:
    listed = admin.client.get("/limits", params={"subject_type": "economy", "subject_id": "capped"}).json()[
        "data"
    ]
    (budget,) = listed
    assert budget["managed_by"] == "budget"
    for response in (
        admin.client.patch(f"/limits/{budget['id']}", json={"amount": "1"}),
        admin.client.delete(f"/limits/{budget['id']}"),
    ):
        assert response.status_code == 409
        assert "budget" in response.json()["error"] and response.json()["code"] == "CONFLICT"
    assert admin.client.get(f"/limits/{budget['id']}").json() == budget
