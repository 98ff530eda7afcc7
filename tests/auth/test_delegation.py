"""Delegation tokens: minted for a room the caller is in, never wider than their room role, revocable."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.auth.conftest import delegate, join, new_room
from tests.support.gateway import Gateway

ROOM = object()  # stands for the test's own room in parametrised bodies


def test_a_room_owner_mints_a_token_that_acts_for_the_room(gateway: Gateway) -> None:
    owner = gateway.user("Manager", email="owner@example.test")
    room = new_room(gateway, owner)
    response = delegate(owner, room, ["manage"], expiry=120)
    assert response.status_code == 201
    result = response.json()
    assert result["group_id"] == room and result["delegation_scope"] == ["manage"]
    assert result["expiry_seconds"] == 120
    agent = gateway.client(result["delegation_jwt"])
    claims = agent.get("/protected/jwt").json()
    assert claims["auth_method"] == "delegation" and claims["acting_as"] == room
    assert claims["user_id"] == str(owner.id) and claims["delegation_scope"] == ["manage"]
    assert claims["delegation_token_id"] == result["delegation_token_id"]
    assert claims["exp"] - claims["iat"] == 120
    assert agent.get(f"/working-groups/{room}").status_code == 200
    listed = owner.client.get("/auth/delegation/tokens").json()["data"]
    assert [(t["id"], t["group_id"], t["delegation_scope"]) for t in listed] == [
        (result["delegation_token_id"], room, ["manage"])
    ]
    assert owner.client.get("/auth/delegation-tokens").json()["data"] == listed


@pytest.mark.parametrize(
    ("room_role", "allowed", "refused"),
    [
        ("viewer", ["read"], ["write"]),
        ("member", ["read", "write"], ["manage"]),
        ("manager", ["manage"], []),
        ("owner", ["read", "manage"], []),
    ],
)
def test_the_scope_never_exceeds_the_callers_room_role(
    gateway: Gateway, room_role: str, allowed: list[str], refused: list[str]
) -> None:
    owner, member = gateway.user("Manager"), gateway.user("Manager")
    room = new_room(gateway, owner)
    if room_role != "owner":
        join(owner, room, member, room_role)
    else:
        member = owner
    assert delegate(member, room, allowed).status_code == 201
    for scope in refused:
        response = delegate(member, room, ["read", scope])
        assert response.status_code == 403 and response.json()["code"] == "FORBIDDEN"


def test_a_read_only_account_delegates_read_only_whatever_its_room_role(gateway: Gateway) -> None:
    owner = gateway.user("Manager")
    viewer = gateway.user("Viewer", permissions=["CreateDelegationToken"])
    room = new_room(gateway, owner)
    join(owner, room, viewer, "manager")
    assert delegate(viewer, room, ["read"]).status_code == 201
    assert delegate(viewer, room, ["write"]).status_code == 403


def test_delegating_needs_the_create_delegation_token_permission(gateway: Gateway) -> None:
    owner = gateway.user("User")  # may create rooms, may not delegate
    room = new_room(gateway, owner)
    response = delegate(owner, room, ["read"])
    assert response.status_code == 403
    assert response.json() == {
        "error": "Insufficient permissions: CreateDelegationToken",
        "code": "FORBIDDEN",
    }


def test_a_room_the_caller_is_not_in_looks_like_no_room_at_all(gateway: Gateway) -> None:
    owner, outsider = gateway.user("Manager"), gateway.user("Manager")
    room = new_room(gateway, owner)
    foreign, missing = delegate(outsider, room, ["read"]), delegate(outsider, str(uuid.uuid4()), ["read"])
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert outsider.client.get("/auth/delegation/tokens").json()["data"] == []


def test_a_revoked_delegation_token_is_refused_at_once_on_both_paths(gateway: Gateway) -> None:
    owner = gateway.user("Manager")
    room = new_room(gateway, owner)
    for path in ("/auth/delegation/tokens", "/auth/delegation-tokens"):
        result = delegate(owner, room, ["write"]).json()
        agent = gateway.client(result["delegation_jwt"])
        assert agent.get("/protected/jwt").status_code == 200
        assert owner.client.delete(f"{path}/{result['delegation_token_id']}").status_code == 204
        refused = agent.get("/protected/jwt")
        assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHORIZED"
        assert owner.client.delete(f"{path}/{result['delegation_token_id']}").status_code == 204
    assert owner.client.get("/auth/delegation/tokens").json()["data"] == []


def test_only_the_minter_can_revoke_and_a_delegated_caller_cannot_delegate(gateway: Gateway) -> None:
    owner, other = gateway.user("Manager"), gateway.user("Manager")
    room = new_room(gateway, owner)
    result = delegate(owner, room, ["manage"]).json()
    for token_id in (result["delegation_token_id"], "not-a-uuid", str(uuid.uuid4())):
        response = other.client.delete(f"/auth/delegation/tokens/{token_id}")
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    agent = gateway.client(result["delegation_jwt"])
    assert agent.get("/protected/jwt").status_code == 200
    again = agent.post("/auth/delegation/jwt", json={"group_id": room, "delegation_scope": ["read"]})
    assert again.status_code == 403
    assert agent.delete(f"/auth/delegation/tokens/{result['delegation_token_id']}").status_code == 403


@pytest.mark.parametrize(
    "body",
    [
        {"delegation_scope": ["read"]},
        {"group_id": "nope", "delegation_scope": ["read"]},
        {"group_id": ROOM, "delegation_scope": []},
        {"group_id": ROOM, "delegation_scope": ["admin"]},
        {"group_id": ROOM, "delegation_scope": "read"},
        {"group_id": ROOM},
        {"group_id": ROOM, "delegation_scope": ["read"], "expiry_seconds": 0},
        {"group_id": ROOM, "delegation_scope": ["read"], "expiry_seconds": 86401},
    ],
)
def test_malformed_delegation_requests_are_400(gateway: Gateway, body: dict[str, Any]) -> None:
    owner = gateway.user("Manager")
    room = new_room(gateway, owner)
    sent = {key: room if value is ROOM else value for key, value in body.items()}
    response = owner.client.post("/auth/delegation/jwt", json=sent)
    assert response.status_code == 400 and response.json()["code"] == "VALIDATION_FAILED"
    assert owner.client.get("/auth/delegation/tokens").json()["data"] == []
