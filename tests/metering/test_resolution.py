"""Which economy a call is metered to (SPEC §5): header, agent, room default, then config default."""

from __future__ import annotations

import uuid
from typing import Any

from switchboard.auth.principal import Principal
from switchboard.db.on_demand import SessionOnDemand
from switchboard.errors import SwitchboardError
from switchboard.metering.economies import Economy, economy_id_for
from switchboard.metering.resolution import resolve_economy
from tests.conftest import GatewayFactory
from tests.metering.conftest import EconomyFactory, add_participant, metering_config
from tests.support.gateway import Gateway, User


def resolve(
    gateway: Gateway, user: User, header: str | None = None, agent: str | None = None, room: str | None = None
) -> Economy | SwitchboardError:
    async def run() -> Economy | SwitchboardError:
        state = gateway.app.state
        async with SessionOnDemand(state.sessionmaker, state.engine) as sessions:
            try:
                return await resolve_economy(
                    sessions,
                    Principal(user_id=user.id, role=user.role),
                    header,
                    uuid.UUID(agent) if agent else None,
                    uuid.UUID(room) if room else None,
                )
            except SwitchboardError as error:
                return error

    result: Economy | SwitchboardError = gateway.server.call_soon(run())
    return result


def status_of(result: Economy | SwitchboardError) -> int | str:
    return result.status if isinstance(result, SwitchboardError) else result.slug


def make_room(user: User, **body: Any) -> str:
    response = user.client.post("/working-groups", json={"name": "room"} | body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_without_any_hint_the_config_default_economy_is_used(metering_gateway: Gateway) -> None:
    assert status_of(resolve(metering_gateway, metering_gateway.user())) == "default"


def test_the_config_may_name_another_default_economy_and_default_still_exists(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    config = metering_config(fake_provider.base_url)
    config["economies"] = [config["economies"][1]]  # only "team"; `default` exists all the same
    config["default_economy"] = "team"
    gateway = make_gateway(config=config)
    try:
        assert status_of(resolve(gateway, gateway.user())) == "team"
        implicit = resolve(gateway, gateway.user(), header="default")
        assert isinstance(implicit, Economy) and implicit.id == economy_id_for("default")
    finally:
        gateway.stop()


def test_x_economy_id_needs_participation_by_slug_or_id(
    metering_gateway: Gateway, admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy()
    member, outsider = metering_gateway.user(), metering_gateway.user()
    add_participant(admin.client, economy["id"], user_id=str(member.id))
    assert status_of(resolve(metering_gateway, member, header=economy["slug"])) == economy["slug"]
    assert status_of(resolve(metering_gateway, member, header=economy["id"])) == economy["slug"]
    assert status_of(resolve(metering_gateway, outsider, header=economy["id"])) == 403
    assert status_of(resolve(metering_gateway, outsider, header="default")) == "default"
    assert status_of(resolve(metering_gateway, outsider, header=str(economy_id_for("default")))) == "default"


def test_an_unknown_x_economy_id_is_404(metering_gateway: Gateway) -> None:
    user = metering_gateway.user()
    assert status_of(resolve(metering_gateway, user, header="no-such-economy")) == 404
    assert status_of(resolve(metering_gateway, user, header=str(uuid.uuid4()))) == 404


def test_a_room_the_caller_is_in_makes_them_a_participant(
    metering_gateway: Gateway, admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy()
    user = metering_gateway.user()
    assert status_of(resolve(metering_gateway, user, header=economy["id"])) == 403
    add_participant(admin.client, economy["id"], room_id=make_room(user))
    assert status_of(resolve(metering_gateway, user, header=economy["id"])) == economy["slug"]


def test_the_agents_economy_comes_before_the_room_default(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> None:
    agents, rooms = make_economy(), make_economy()
    user = metering_gateway.user()
    room = make_room(user, default_economy_id=rooms["id"])
    assert status_of(resolve(metering_gateway, user, room=room)) == rooms["slug"]
    assert status_of(resolve(metering_gateway, user, agent=agents["id"], room=room)) == agents["slug"]
    # The header beats both, when the caller participates.
    both = resolve(metering_gateway, user, header="default", agent=agents["id"], room=room)
    assert status_of(both) == "default"


def test_a_room_without_a_default_economy_falls_back_to_the_config_default(metering_gateway: Gateway) -> None:
    user = metering_gateway.user()
    assert status_of(resolve(metering_gateway, user, room=make_room(user))) == "default"
