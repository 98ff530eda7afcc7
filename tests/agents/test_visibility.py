"""Visibility (the seed's rules): own user-tier specs, rooms', economies', and system-tier for everyone."""

from __future__ import annotations

import uuid

from tests.agents.conftest import add_member, create, make_economy, make_room, make_spec, visible_ids
from tests.agents.test_registry import nested_error
from tests.support.gateway import Gateway, User


def assert_invisible(user: User, agent_id: str) -> None:
    assert agent_id not in visible_ids(user)
    nested_error(user.client.get(f"/agents/{agent_id}"), 404, "NOT_FOUND")
    nested_error(user.client.get(f"/agents/{agent_id}/versions"), 404, "NOT_FOUND")
    nested_error(user.client.post(f"/agents/{agent_id}/versions/1/retire"), 404, "NOT_FOUND")


def test_a_users_own_agent_is_invisible_to_another_user(gateway: Gateway) -> None:
    alice, bob = gateway.user(), gateway.user()
    spec = create(alice, role="zqprivate helper")
    assert spec["id"] in visible_ids(alice)
    assert_invisible(bob, spec["id"])
    hits = bob.client.post("/agents/discover", json={"query": "zqprivate"}).json()["agents"]
    assert hits == []


def test_system_agents_are_visible_to_every_user(gateway: Gateway) -> None:
    for user in (gateway.user(), gateway.user(role="Viewer"), gateway.user(role="ApiClient")):
        assert {"researcher", "code-reviewer"} <= visible_ids(user)
        assert user.client.get("/agents/researcher").json()["source"] == "seed"


def test_a_room_agent_is_visible_to_its_members_only_and_leaving_hides_it(gateway: Gateway) -> None:
    owner, member, viewer, outsider = gateway.user(), gateway.user(), gateway.user(), gateway.user()
    room = make_room(owner)
    add_member(owner, room, member)
    add_member(owner, room, viewer, role="viewer")
    spec = create(member, working_group_id=str(room))

    for user in (owner, member, viewer):
        assert spec["id"] in visible_ids(user)
        assert user.client.get(f"/agents/{spec['id']}").json()["working_group_id"] == str(room)
    assert_invisible(outsider, spec["id"])

    assert owner.client.delete(f"/working-groups/{room}/members/{viewer.id}").status_code == 204
    assert_invisible(viewer, spec["id"])


def test_publishing_into_a_room_needs_a_non_viewer_member(gateway: Gateway) -> None:
    owner, viewer, outsider = gateway.user(), gateway.user(), gateway.user()
    room = make_room(owner)
    add_member(owner, room, viewer, role="viewer")
    spec = make_spec(working_group_id=str(room))
    nested_error(viewer.client.post("/agents", json=spec), 403, "FORBIDDEN")
    nested_error(outsider.client.post("/agents", json=spec), 404, "NOT_FOUND")
    nested_error(
        outsider.client.post("/agents", json=make_spec(working_group_id=str(uuid.uuid4()))), 404, "NOT_FOUND"
    )
    assert spec["id"] not in visible_ids(owner)


def test_an_economy_agent_is_visible_to_its_participants_only(gateway: Gateway) -> None:
    admin = gateway.user(role="Admin")
    participant, outsider = gateway.user(), gateway.user()
    economy = make_economy(admin, participant)
    spec = create(participant, economy_id=str(economy))
    assert spec["id"] in visible_ids(participant)
    assert_invisible(outsider, spec["id"])
    # An Admin sees every economy but participates only where named: visibility follows participation.
    assert spec["id"] not in visible_ids(admin)


def test_naming_an_economy_needs_participation(gateway: Gateway) -> None:
    admin = gateway.user(role="Admin")
    economy = make_economy(admin)
    user = gateway.user()
    nested_error(user.client.post("/agents", json=make_spec(economy_id=str(economy))), 403, "FORBIDDEN")
    nested_error(user.client.post("/agents", json=make_spec(economy_id=str(uuid.uuid4()))), 404, "NOT_FOUND")


def test_a_personal_agent_billed_to_a_shared_economy_stays_personal(gateway: Gateway) -> None:
    owner, other = gateway.user(), gateway.user()
    default_economy = gateway.app.state.default_economy.id  # every user participates in it
    spec = create(owner, economy_id=str(default_economy), user_id=str(owner.id))
    assert spec["id"] in visible_ids(owner)
    assert_invisible(other, spec["id"])


def test_user_id_must_be_the_callers_own_and_source_seed_is_for_admins(gateway: Gateway) -> None:
    user = gateway.user()
    nested_error(user.client.post("/agents", json=make_spec(user_id=str(uuid.uuid4()))), 403, "FORBIDDEN")
    nested_error(user.client.post("/agents", json=make_spec(source="seed")), 403, "FORBIDDEN")
    admin = gateway.user(role="Admin")
    spec = create(admin, source="seed", role="zqsystem helper")
    assert spec["id"] in visible_ids(gateway.user())


def test_nobody_else_may_publish_a_version_of_an_agent(gateway: Gateway) -> None:
    owner, member, outsider = gateway.user(), gateway.user(), gateway.user()
    room = make_room(owner)
    add_member(owner, room, member)
    private = create(owner)
    shared = create(owner, working_group_id=str(room))

    nested_error(outsider.client.post("/agents", json={**private, "version": "2"}), 409, "CONFLICT")
    nested_error(member.client.post("/agents", json={**shared, "version": "2"}), 403, "FORBIDDEN")
    nested_error(
        member.client.post("/agents", json={**make_spec(id="researcher"), "version": "9"}), 403, "FORBIDDEN"
    )
    assert owner.client.get(f"/agents/{shared['id']}").json()["version"] == "1"
    assert gateway.user().client.get("/agents/researcher").json()["version"] == "1"


def test_retire_is_for_the_author_room_owners_and_managers_and_admins(gateway: Gateway) -> None:
    owner, manager, author, member = gateway.user(), gateway.user(), gateway.user(), gateway.user()
    room = make_room(owner)
    add_member(owner, room, manager, role="manager")
    add_member(owner, room, author)
    add_member(owner, room, member)
    spec = create(author, working_group_id=str(room))
    for version in ("2", "3", "4"):
        create(author, id=spec["id"], version=version, working_group_id=str(room))

    nested_error(member.client.post(f"/agents/{spec['id']}/versions/4/retire"), 403, "FORBIDDEN")
    assert author.client.post(f"/agents/{spec['id']}/versions/4/retire").status_code == 200
    assert manager.client.post(f"/agents/{spec['id']}/versions/3/retire").status_code == 200
    assert owner.client.post(f"/agents/{spec['id']}/versions/2/retire").status_code == 200
    # An Admin outside the room moderates it too, although they cannot read it.
    admin = gateway.user(role="Admin")
    assert admin.client.post(f"/agents/{spec['id']}/versions/1/retire").status_code == 200
    nested_error(admin.client.get(f"/agents/{spec['id']}"), 404, "NOT_FOUND")
    versions = member.client.get(f"/agents/{spec['id']}/versions").json()["data"]
    assert all(v["retired"] for v in versions) and len(versions) == 4


def test_a_newer_version_outside_the_callers_view_does_not_shadow_the_one_they_see(gateway: Gateway) -> None:
    owner, member = gateway.user(), gateway.user()
    room = make_room(owner)
    add_member(owner, room, member)
    spec = create(owner, working_group_id=str(room), display_name="Room version")
    create(owner, id=spec["id"], version="2", user_id=str(owner.id), display_name="Private draft")

    assert member.client.get(f"/agents/{spec['id']}").json()["display_name"] == "Room version"
    assert owner.client.get(f"/agents/{spec['id']}").json()["display_name"] == "Private draft"
    assert [v["version"] for v in member.client.get(f"/agents/{spec['id']}/versions").json()["data"]] == ["1"]


def test_an_agent_an_admin_publishes_for_a_user_is_that_users_to_see_version_and_retire(
    gateway: Gateway,
) -> None:
    admin, user, other = gateway.user(role="Admin"), gateway.user(), gateway.user()
    spec = create(admin, user_id=str(user.id))
    assert spec["id"] in visible_ids(user)
    assert spec["id"] not in visible_ids(admin)  # user tier: the named user's, not the author's view
    assert_invisible(other, spec["id"])
    assert user.client.post("/agents", json={**spec, "version": "2"}).status_code == 201
    assert user.client.post(f"/agents/{spec['id']}/versions/1/retire").status_code == 200
