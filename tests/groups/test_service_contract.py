"""The groups functions other domains call (docs/ARCHITECTURE.md), run on the gateway's own database."""

from __future__ import annotations

import uuid
from typing import Any

from switchboard.groups import service
from tests.groups.factories import new_room, room_cast
from tests.support.gateway import Gateway


def _call(gateway: Gateway, function: Any, *args: Any) -> Any:
    async def run() -> Any:
        async with gateway.app.state.sessionmaker() as session:
            return await function(session, *args)

    return gateway.server.call_soon(run())


def test_member_role_names_each_role_and_none_for_outsiders(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    room = uuid.UUID(cast.room_id)
    for role in ("owner", "manager", "member", "viewer"):
        assert _call(gateway, service.member_role, room, cast.role(role).id) == role
    assert _call(gateway, service.member_role, room, cast.outsider.id) is None
    assert _call(gateway, service.member_role, uuid.uuid4(), cast.owner.id) is None


def test_room_ids_of_lists_every_room_a_user_is_in(gateway: Gateway) -> None:
    cast = room_cast(gateway)
    second = new_room(cast.member, name="Mine too")
    found = _call(gateway, service.room_ids_of, cast.member.id)
    assert sorted(found) == sorted([uuid.UUID(cast.room_id), uuid.UUID(second["id"])])
    assert _call(gateway, service.room_ids_of, cast.outsider.id) == []


def test_room_default_economy_is_the_uuid_stored_or_none(gateway: Gateway) -> None:
    economy = uuid.uuid4()
    owner = gateway.user()
    with_economy = new_room(owner, default_economy_id=str(economy))
    without = new_room(owner)
    assert _call(gateway, service.room_default_economy, uuid.UUID(with_economy["id"])) == economy
    assert _call(gateway, service.room_default_economy, uuid.UUID(without["id"])) is None
    assert _call(gateway, service.room_default_economy, uuid.uuid4()) is None
