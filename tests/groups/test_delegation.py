"""Delegation tokens on rooms: they reach their `acting_as` room only, and `manage` is needed to change it."""

from __future__ import annotations

import uuid

import pytest

from tests.groups.factories import delegated, new_room, room_cast
from tests.support.gateway import Gateway


@pytest.mark.parametrize("scope", ["read", "write", "manage"])
def test_any_scope_reads_its_room_and_only_its_room(gateway: Gateway, scope: str) -> None:
    cast = room_cast(gateway)
    other = new_room(cast.owner, name="Other")
    agent = delegated(gateway, cast.owner, cast.room_id, scope)
    assert agent.client.get(f"/working-groups/{cast.room_id}").status_code == 200
    assert agent.client.get(f"/working-groups/{cast.room_id}/members").status_code == 200
    assert [r["id"] for r in agent.client.get("/working-groups").json()["data"]] == [cast.room_id]
    assert agent.client.get(f"/working-groups/{other['id']}").status_code == 404


@pytest.mark.parametrize(("scope", "status"), [("read", 403), ("write", 403), ("manage", 200)])
def test_changing_a_room_through_delegation_needs_manage(gateway: Gateway, scope: str, status: int) -> None:
    cast = room_cast(gateway)
    agent = delegated(gateway, cast.owner, cast.room_id, scope)
    response = agent.client.patch(f"/working-groups/{cast.room_id}", json={"description": "by agent"})
    assert response.status_code == status, response.text
    added = agent.client.post(
        f"/working-groups/{cast.room_id}/members", json={"user_id": str(uuid.uuid4()), "role": "member"}
    )
    assert added.status_code == (201 if status == 200 else 403), added.text


def test_manage_scope_never_lifts_a_member_above_their_room_role(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    agent = delegated(gateway, cast.member, cast.room_id, "manage")
    assert agent.client.patch(f"/working-groups/{cast.room_id}", json={"name": "x"}).status_code == 403
    manager_agent = delegated(gateway, cast.manager, cast.room_id, "manage")
    path = f"/working-groups/{cast.room_id}/members/{cast.owner.id}"
    assert manager_agent.client.patch(path, json={"role": "member"}).status_code == 403
    assert manager_agent.client.delete(f"/working-groups/{cast.room_id}").status_code == 403


def test_a_delegation_token_cannot_create_rooms(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    agent = delegated(gateway, cast.owner, cast.room_id, "manage")
    response = agent.client.post("/working-groups", json={"name": "spawned"})
    assert response.status_code == 403
    assert len(cast.owner.client.get("/working-groups").json()["data"]) == 1


def test_a_delegation_token_for_a_room_its_user_left_is_refused(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    agent = delegated(gateway, cast.manager, cast.room_id, "manage")
    assert (
        cast.owner.client.delete(f"/working-groups/{cast.room_id}/members/{cast.manager.id}").status_code
        == 204
    )
    assert agent.client.get(f"/working-groups/{cast.room_id}").status_code == 404
