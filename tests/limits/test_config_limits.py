"""`limits:` in the config file: written at start under stable ids, kept in step, and checked line by line."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from switchboard.app import create_app
from switchboard.auth.users import create_user
from switchboard.config_file import ConfigError, load_config
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.limits.config_sync import sync_config_limits
from switchboard.metering.economies import economy_id_for
from tests.conftest import GatewayFactory
from tests.limits.conftest import AGENT_ID, create_limit, limits_config
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway, build_settings, write_config

ROOM = str(uuid.uuid4())
USER = str(uuid.uuid4())
KEY = str(uuid.uuid4())


def config_with(provider_url: str, limits: list[dict[str, Any]]) -> dict[str, Any]:
    return {**limits_config(provider_url), "limits": limits}


BASE_LIMITS: list[dict[str, Any]] = [
    {"subject_type": "economy", "subject_id": "capped", "metric": "cost", "window": "day", "amount": "1000"},
    {
        "subject_type": "user",
        "subject_id": USER,
        "economy_id": "default",
        "metric": "requests",
        "window": "minute",
        "amount": "10",
    },
    {"subject_type": "room", "subject_id": ROOM, "metric": "tokens", "window": "hour", "amount": "5000"},
    {"subject_type": "agent", "subject_id": AGENT_ID, "metric": "requests", "window": "day", "amount": "7"},
    {
        "subject_type": "api_key",
        "subject_id": KEY,
        "metric": "cost",
        "window": "total",
        "amount": "0",
        "allow_unpriced": True,
    },
]


def config_id(subject_type: str, subject_id: str, metric: str, window: str, economy: uuid.UUID | None) -> str:
    canonical = f"{subject_type}:{subject_id}:{metric}:{window}:{economy or '-'}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:limit:{canonical}"))


def config_limits(gateway: Gateway) -> dict[str, dict[str, Any]]:
    admin = gateway.user(role="Admin")
    listed = admin.client.get("/limits", params={"limit": 500}).json()["data"]
    return {item["id"]: item for item in listed if item["managed_by"] == "config"}


def test_config_limits_are_stored_under_stable_ids_with_economies_resolved(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    gateway = make_gateway(config=config_with(fake_provider.base_url, BASE_LIMITS))
    found = config_limits(gateway)
    capped, default = economy_id_for("capped"), economy_id_for("default")
    assert set(found) == {
        config_id("economy", str(capped), "cost", "day", None),
        config_id("user", USER, "requests", "minute", default),
        config_id("room", ROOM, "tokens", "hour", None),
        config_id("agent", AGENT_ID, "requests", "day", None),
        config_id("api_key", KEY, "cost", "total", None),
    }
    economy_limit = found[config_id("economy", str(capped), "cost", "day", None)]
    assert (economy_limit["subject_id"], economy_limit["amount"], economy_limit["created_by"]) == (
        str(capped),
        "1000",
        None,
    )
    user_limit = found[config_id("user", USER, "requests", "minute", default)]
    assert user_limit["economy_id"] == str(default)
    assert found[config_id("api_key", KEY, "cost", "total", None)]["allow_unpriced"] is True
    admin = gateway.user(role="Admin")
    for limit_id in found:
        for response in (
            admin.client.patch(f"/limits/{limit_id}", json={"amount": "1"}),
            admin.client.delete(f"/limits/{limit_id}"),
        ):
            assert response.status_code == 409
            assert "config file" in response.json()["error"]
    gateway.stop()


def add_account(gateway: Gateway, email: str) -> str:
    async def insert() -> str:
        app = gateway.app
        async with app.state.sessionmaker() as session, session.begin():
            user = await create_user(
                session, app.state.auth.passwords, email=email, role="User", password="a long password"
            )
            return str(user.id)

    return str(gateway.server.call_soon(insert()))


def test_a_restart_applies_config_changes_keeps_ids_and_leaves_api_limits_alone(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    first = make_gateway(config=config_with(fake_provider.base_url, BASE_LIMITS))
    before = config_limits(first)
    email = f"limited-{uuid.uuid4().hex[:8]}@example.test"
    account = add_account(first, email)
    api_limit = create_limit(first.user(role="Admin").client, subject_type="economy", subject_id="capped")
    first.stop()
    changed = [dict(entry) for entry in BASE_LIMITS[:-1]]  # the api_key limit is gone
    changed[0]["amount"] = "2000"
    changed.append(
        {
            "subject_type": "user",
            "subject_id": email.upper(),
            "metric": "tokens",
            "window": "month",
            "amount": "9",
        }
    )
    second = make_gateway(
        config=config_with(fake_provider.base_url, changed), database_url=first.settings.database_url
    )
    after = config_limits(second)
    gone = config_id("api_key", KEY, "cost", "total", None)
    added = config_id("user", account, "tokens", "month", None)
    assert set(after) == (set(before) - {gone}) | {added}
    assert after[added]["subject_id"] == account
    economy_limit = config_id("economy", str(economy_id_for("capped")), "cost", "day", None)
    assert after[economy_limit]["amount"] == "2000"
    assert after[economy_limit]["created_at"] == before[economy_limit]["created_at"]
    admin = second.user(role="Admin")
    assert admin.client.get(f"/limits/{api_limit['id']}").json() == api_limit
    second.stop()


def test_replicas_starting_together_write_each_config_limit_once(
    tmp_path: Path, databases: DatabaseFactory, fake_provider: Any
) -> None:
    path = write_config(tmp_path, config_with(fake_provider.base_url, BASE_LIMITS))
    settings = build_settings(tmp_path, asyncio.run(databases.create()), path)
    # The first start migrates and creates the economies; then two replicas sync at once.
    app = create_app(settings)

    async def scenario() -> int:
        async with app.router.lifespan_context(app):
            pass
        engines = [make_engine(settings.database_url) for _ in range(2)]
        try:

            async def sync(engine: Any) -> int:
                async with make_sessionmaker(engine)() as session, session.begin():
                    return await sync_config_limits(session, settings.config)

            counts = await asyncio.gather(*(sync(engine) for engine in engines))
            assert counts == [5, 5]
            async with engines[0].connect() as conn:
                rows = await conn.exec_driver_sql("SELECT count(*) FROM limits WHERE managed_by = 'config'")
                return int(rows.scalar_one())
        finally:
            for engine in engines:
                await engine.dispose()

    assert asyncio.run(scenario()) == 5


def line_of(path: Path, marker: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text)


@pytest.mark.parametrize(
    ("entry", "marker", "problem"),
    [
        ({"amount": "1.5"}, "amount: '1.5'", "limits.1.amount: an integer string"),
        ({"amount": "-3"}, "amount: '-3'", "limits.1.amount: an integer string"),
        (
            {"subject_id": "no-such-economy"},
            "no-such-economy",
            "limits.1.subject_id: no economy 'no-such-economy'",
        ),
        ({"economy_id": "capped"}, "economy_id: capped", "limits.1.economy_id: narrows a user, room"),
        ({"subject_type": "room", "subject_id": "lobby"}, "lobby", "limits.1.subject_id: a room is named by"),
        (
            {"subject_type": "user", "subject_id": "x"},
            "subject_id: x",
            "limits.1.subject_id: a user is named by",
        ),
        (
            {"subject_type": "user", "subject_id": "nobody@example.test"},
            "nobody@example.test",
            "limits.1.subject_id: no user with email 'nobody@example.test'",
        ),
        (
            {"subject_type": "user", "subject_id": USER, "economy_id": "nowhere"},
            "nowhere",
            "limits.1.economy_id: no economy 'nowhere'",
        ),
        (
            {"subject_id": str(economy_id_for("capped"))},
            str(economy_id_for("capped")),
            "the same limit as limits.0",
        ),
    ],
)
def test_a_bad_config_limit_stops_the_start_naming_its_line(
    tmp_path: Path,
    databases: DatabaseFactory,
    fake_provider: Any,
    entry: dict[str, Any],
    marker: str,
    problem: str,
) -> None:
    first = {
        "subject_type": "economy",
        "subject_id": "capped",
        "metric": "cost",
        "window": "day",
        "amount": "5",
    }
    bad = {**first, **entry}
    path = write_config(tmp_path, config_with(fake_provider.base_url, [first, bad]))
    app = create_app(build_settings(tmp_path, asyncio.run(databases.create()), path))

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(ConfigError) as raised:
        asyncio.run(start())
    message = str(raised.value)
    assert message.startswith(f"{path}:{line_of(path, marker)}: "), message
    assert problem in message


def test_an_amount_written_as_a_number_is_refused_when_the_file_is_read(
    tmp_path: Path, fake_provider: Any
) -> None:
    limit = {
        "subject_type": "economy",
        "subject_id": "capped",
        "metric": "cost",
        "window": "day",
        "amount": 5,
    }
    path = write_config(tmp_path, config_with(fake_provider.base_url, [limit]))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}:{line_of(path, 'amount: 5')}: limits.0.amount: ")
