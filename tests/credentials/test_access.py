"""Who may see and change which credential (SPEC §2, §7), for allowed and refused callers alike."""

from __future__ import annotations

import pytest

from tests.credentials.factories import fresh_secret, listed_ids, new_credential
from tests.groups.factories import add_member, delegated, room_cast
from tests.support.gateway import Gateway, User


def _create(user: User, **fields: object) -> int:
    response = user.client.post(
        "/llm-credentials", json={"provider": "openai", "secret": fresh_secret(), **fields}
    )
    return response.status_code


def test_a_users_credential_is_theirs_alone(gateway: Gateway) -> None:
    owner, other = gateway.user(), gateway.user("Admin")
    body, _ = new_credential(owner)
    path = f"/llm-credentials/{body['id']}"
    assert other.client.get(path).status_code == 404
    assert other.client.patch(path, json={"label": "mine"}).status_code == 404
    assert other.client.delete(path).status_code == 404
    assert listed_ids(other) == []
    assert owner.client.get(path).json() == body


@pytest.mark.parametrize(
    ("role", "status"),
    [("User", 201), ("Operator", 201), ("ApiClient", 201), ("Admin", 201), ("Viewer", 403)],
)
def test_everyone_but_viewers_manage_their_own_credentials(gateway: Gateway, role: str, status: int) -> None:
    user = gateway.user(role)
    assert _create(user) == status
    assert len(listed_ids(user)) == (1 if status == 201 else 0)


def test_a_platform_viewer_reads_but_never_writes(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    reader = gateway.user("Viewer")
    add_member(cast.owner, cast.room_id, reader.id, "owner")
    body, _ = new_credential(cast.owner, room_id=cast.room_id)
    path = f"/llm-credentials/{body['id']}"
    assert reader.client.get(path).status_code == 200
    assert listed_ids(reader) == [body["id"]]
    assert _create(reader, room_id=cast.room_id) == 403
    assert reader.client.patch(path, json={"label": "x"}).status_code == 403
    assert reader.client.delete(path).status_code == 403
    assert cast.owner.client.get(path).json() == body


@pytest.mark.parametrize("role", ["owner", "manager", "member", "viewer"])
def test_every_member_lists_and_reads_the_rooms_credentials(gateway: Gateway, role: str) -> None:
    cast = room_cast(gateway)
    body, _ = new_credential(cast.owner, room_id=cast.room_id)
    member = cast.role(role)
    assert listed_ids(member, room_id=cast.room_id) == [body["id"]]
    assert member.client.get(f"/llm-credentials/{body['id']}").json() == body


def test_an_outsider_cannot_see_a_rooms_credentials(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    body, _ = new_credential(cast.owner, room_id=cast.room_id)
    outsider = cast.outsider.client
    assert outsider.get(f"/llm-credentials/{body['id']}").status_code == 404
    assert outsider.patch(f"/llm-credentials/{body['id']}", json={"label": "x"}).status_code == 404
    assert outsider.delete(f"/llm-credentials/{body['id']}").status_code == 404
    assert listed_ids(cast.outsider) == []


@pytest.mark.parametrize(
    ("role", "allowed"), [("owner", True), ("manager", True), ("member", False), ("viewer", False)]
)
def test_owners_and_managers_change_a_rooms_credentials(gateway: Gateway, role: str, allowed: bool) -> None:
    cast = room_cast(gateway)
    actor = cast.role(role)
    expected = 201 if allowed else 403
    assert _create(actor, room_id=cast.room_id) == expected
    body, _ = new_credential(cast.owner, room_id=cast.room_id, label="before")
    path = f"/llm-credentials/{body['id']}"
    patched = actor.client.patch(path, json={"label": "after", "secret": fresh_secret()})
    assert patched.status_code == (200 if allowed else 403), patched.text
    if not allowed:
        assert patched.json()["code"] == "FORBIDDEN"
        assert cast.owner.client.get(path).json() == body
    assert actor.client.delete(path).status_code == (204 if allowed else 403)
    assert cast.owner.client.get(path).status_code == (404 if allowed else 200)


@pytest.mark.parametrize(("scope", "allowed"), [("read", False), ("write", False), ("manage", True)])
def test_a_delegation_token_changes_the_rooms_credentials_only_with_manage(
    gateway: Gateway, scope: str, allowed: bool
) -> None:
    cast = room_cast(gateway)
    agent = delegated(gateway, cast.owner, cast.room_id, scope)
    body, _ = new_credential(cast.owner, room_id=cast.room_id)
    path = f"/llm-credentials/{body['id']}"
    assert listed_ids(agent, room_id=cast.room_id) == [body["id"]]
    assert agent.client.get(path).status_code == 200
    assert _create(agent, room_id=cast.room_id) == (201 if allowed else 403)
    assert agent.client.patch(path, json={"label": "agent"}).status_code == (200 if allowed else 403)
    assert agent.client.delete(path).status_code == (204 if allowed else 403)


def test_a_delegation_token_reaches_no_other_room(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    other = room_cast(gateway)
    add_member(other.owner, other.room_id, cast.owner.id, "owner")
    elsewhere, _ = new_credential(other.owner, room_id=other.room_id)
    agent = delegated(gateway, cast.owner, cast.room_id, "manage")
    assert agent.client.get(f"/llm-credentials/{elsewhere['id']}").status_code == 404
    assert agent.client.delete(f"/llm-credentials/{elsewhere['id']}").status_code == 404
    assert _create(agent, room_id=other.room_id) == 404
    assert elsewhere["id"] not in listed_ids(agent)
    assert elsewhere["id"] in listed_ids(cast.owner)


def test_a_delegation_token_does_not_change_personal_credentials(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    own, _ = new_credential(cast.owner)
    agent = delegated(gateway, cast.owner, cast.room_id, "manage")
    assert _create(agent) == 403
    assert agent.client.patch(f"/llm-credentials/{own['id']}", json={"label": "x"}).status_code == 403
    assert agent.client.delete(f"/llm-credentials/{own['id']}").status_code == 403
    assert cast.owner.client.get(f"/llm-credentials/{own['id']}").json() == own


def test_a_managers_delegation_token_with_manage_works_a_members_does_not(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    assert _create(delegated(gateway, cast.manager, cast.room_id, "manage"), room_id=cast.room_id) == 201
    assert _create(delegated(gateway, cast.member, cast.room_id, "manage"), room_id=cast.room_id) == 403
