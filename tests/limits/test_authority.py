"""A limit binds whoever is below the authority that set it (issue 31): room and economy owners cannot
raise or delete an Admin's limit on them, and still manage the limits they set themselves."""

from __future__ import annotations

from typing import Any

from tests.limits.conftest import create_limit, join_economy, new_economy, new_room
from tests.support.gateway import Gateway, User


def _unchanged_after_refusals(owner: User, limit: dict[str, Any]) -> None:
    path = f"/limits/{limit['id']}"
    raised = owner.client.patch(path, json={"amount": "1000000"})
    assert raised.status_code == 403, raised.text
    assert raised.json()["code"] == "FORBIDDEN" and "Admin" in raised.json()["error"]
    assert owner.client.patch(path, json={"allow_unpriced": True}).status_code == 403
    assert owner.client.delete(path).status_code == 403
    kept = owner.client.get(path)  # still theirs to see
    assert kept.status_code == 200
    assert (kept.json()["amount"], kept.json()["allow_unpriced"]) == (
        limit["amount"],
        limit["allow_unpriced"],
    )


def test_a_room_owner_cannot_raise_or_delete_the_limit_an_admin_set_on_their_room(
    limits_gateway: Gateway, admin: User
) -> None:
    owner = limits_gateway.user()
    room = new_room(owner)
    capped = create_limit(admin.client, subject_type="room", subject_id=room, amount="10")
    assert capped["authority"] == "admin"
    _unchanged_after_refusals(owner, capped)
    own = create_limit(owner.client, subject_type="room", subject_id=room, window="hour", amount="5")
    assert own["authority"] == "owner"
    assert owner.client.patch(f"/limits/{own['id']}", json={"amount": "6"}).status_code == 200
    assert owner.client.delete(f"/limits/{own['id']}").status_code == 204
    assert admin.client.patch(f"/limits/{capped['id']}", json={"amount": "11"}).status_code == 200
    assert admin.client.delete(f"/limits/{capped['id']}").status_code == 204


def test_an_economy_owner_cannot_raise_or_delete_an_admins_limits_on_their_economy(
    limits_gateway: Gateway, admin: User
) -> None:
    economy = new_economy(admin)
    owner, member = limits_gateway.user(), limits_gateway.user()
    join_economy(admin, economy["id"], owner, "owner")
    on_economy = create_limit(
        admin.client, subject_type="economy", subject_id=economy["slug"], metric="cost", amount="5000"
    )
    narrowed = create_limit(
        admin.client, subject_type="user", subject_id=str(member.id), economy_id=economy["slug"]
    )
    for limit in (on_economy, narrowed):
        _unchanged_after_refusals(owner, limit)
    own = create_limit(
        owner.client,
        subject_type="user",
        subject_id=str(member.id),
        economy_id=economy["slug"],
        window="hour",
    )
    assert owner.client.patch(f"/limits/{own['id']}", json={"amount": "7"}).status_code == 200
    assert owner.client.delete(f"/limits/{own['id']}").status_code == 204


def test_an_admin_cannot_change_a_superadmins_limit_and_a_change_takes_the_changers_authority(
    limits_gateway: Gateway, admin: User
) -> None:
    superadmin = limits_gateway.user(role="SuperAdmin")
    owner = limits_gateway.user()
    room = new_room(owner)
    top = create_limit(superadmin.client, subject_type="room", subject_id=room, amount="10")
    assert top["authority"] == "superadmin"
    assert admin.client.patch(f"/limits/{top['id']}", json={"amount": "20"}).status_code == 403
    assert admin.client.delete(f"/limits/{top['id']}").status_code == 403
    own = create_limit(owner.client, subject_type="room", subject_id=room, window="hour", amount="5")
    changed = admin.client.patch(f"/limits/{own['id']}", json={"amount": "4"})
    assert (changed.status_code, changed.json()["authority"]) == (200, "admin")
    assert owner.client.patch(f"/limits/{own['id']}", json={"amount": "9"}).status_code == 403
    assert superadmin.client.delete(f"/limits/{top['id']}").status_code == 204
    assert superadmin.client.delete(f"/limits/{own['id']}").status_code == 204
