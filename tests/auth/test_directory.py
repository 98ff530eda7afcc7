"""GET /users: a user's email for their id, to those who may know it (the console names people by email)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.auth.conftest import Account, make_account, new_room
from tests.support.gateway import Gateway, User


def as_user(gateway: Gateway, account: Account, **claims: Any) -> User:
    return gateway.user(role=account.role, sub=account.id, email=account.email, **claims)


def emails(user: User, *ids: uuid.UUID | str) -> dict[str, str]:
    response = user.client.get("/users", params=[("id", str(i)) for i in ids])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["next_cursor"] is None
    return {person["id"]: person["email"] for person in body["data"]}


def test_a_caller_reads_their_own_email_and_an_admin_anyones(gateway: Gateway) -> None:
    alice, bob = make_account(gateway), make_account(gateway)
    admin = as_user(gateway, make_account(gateway, "Admin"))
    stranger = uuid.uuid4()
    assert emails(as_user(gateway, alice), alice.id) == {str(alice.id): alice.email}
    assert emails(admin, alice.id, bob.id, stranger) == {str(alice.id): alice.email, str(bob.id): bob.email}


def test_a_plain_user_reads_only_fellow_room_members_and_their_owned_economys_participants(
    gateway: Gateway,
) -> None:
    alice, bob, carol, dave = (make_account(gateway) for _ in range(4))
    viewer = make_account(gateway, "Viewer")
    admin = as_user(gateway, make_account(gateway, "Admin"))
    alice_user = as_user(gateway, alice)
    room = new_room(gateway, alice_user)
    for who, role in ((bob, "member"), (viewer, "viewer")):
        added = alice_user.client.post(
            f"/working-groups/{room}/members", json={"user_id": str(who.id), "role": role}
        )
        assert added.status_code == 201, added.text
    economy = admin.client.post("/economies", json={"slug": f"e-{uuid.uuid4().hex[:8]}", "name": "E"}).json()
    for who, role in ((carol, "owner"), (dave, "member")):
        body = {"user_id": str(who.id), "role": role}
        assert admin.client.post(f"/economies/{economy['id']}/participants", json=body).status_code == 201

    everyone = (alice.id, bob.id, carol.id, dave.id, viewer.id)
    # A room's members know each other (a Viewer too); nobody else.
    in_room = {str(a.id): a.email for a in (alice, bob, viewer)}
    assert emails(alice_user, *everyone) == in_room
    assert emails(as_user(gateway, viewer), *everyone) == in_room
    # An economy's owner knows its user participants; a member of it knows only themselves.
    assert emails(as_user(gateway, carol), *everyone) == {
        str(carol.id): carol.email,
        str(dave.id): dave.email,
    }
    assert emails(as_user(gateway, dave), *everyone) == {str(dave.id): dave.email}
    # ReadUsage (a billing system) is not a way to read people's emails.
    billing = as_user(gateway, make_account(gateway), permissions=["ReadUsage"])
    assert emails(billing, *everyone) == {}


def test_bad_lookups_are_400(gateway: Gateway) -> None:
    client = as_user(gateway, make_account(gateway)).client
    for params in ([], [("id", "not-a-uuid")], [("id", str(uuid.uuid4())) for _ in range(101)]):
        response = client.get("/users", params=params)
        assert response.status_code == 400, response.text
        assert response.json()["code"] in ("VALIDATION_FAILED", "BAD_REQUEST")
    assert gateway.client().get("/users", params={"id": str(uuid.uuid4())}).status_code == 401
