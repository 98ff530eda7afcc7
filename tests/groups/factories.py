"""Factories for rooms and members, built through the HTTP API as a caller would."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from tests.support.gateway import Gateway, User

ROOM_ROLES = ("owner", "manager", "member", "viewer")


def new_room(owner: User, name: str = "Research", **fields: Any) -> dict[str, Any]:
    response = owner.client.post("/working-groups", json={"name": name, **fields})
    assert response.status_code == 201, response.text
    return response.json()


def add_member(by: User, room_id: str, user_id: uuid.UUID, role: str) -> dict[str, Any]:
    response = by.client.post(
        f"/working-groups/{room_id}/members", json={"user_id": str(user_id), "role": role}
    )
    assert response.status_code == 201, response.text
    return response.json()


@dataclass
class Cast:
    """One room with a user in each room role, and an outsider."""

    room_id: str
    owner: User
    manager: User
    member: User
    viewer: User
    outsider: User

    def role(self, name: str) -> User:
        user: User = getattr(self, name)
        return user


def room_cast(gateway: Gateway, **room_fields: Any) -> Cast:
    owner = gateway.user()
    room = new_room(owner, **room_fields)
    users = {"owner": owner}
    for role in ("manager", "member", "viewer"):
        users[role] = gateway.user()
        add_member(owner, room["id"], users[role].id, role)
    return Cast(room_id=room["id"], outsider=gateway.user(), **users)


def delegated(gateway: Gateway, user: User, room_id: str, scope: str) -> User:
    """The same user acting for a room through a delegation token of one scope."""
    token = gateway.tokens.delegation(sub=user.id, room_id=uuid.UUID(room_id), scope=[scope], role=user.role)
    return User(id=user.id, role=user.role, token=token, client=gateway.client(token))
