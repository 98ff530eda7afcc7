"""Seed agents from the config file: system tier, stored once across replicas, bad ones stop the start."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from switchboard.app import create_app
from switchboard.config_file import ConfigError
from tests.agents.conftest import SEED_AGENTS, agents_test_config
from tests.conftest import GatewayFactory
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway, build_settings, write_config


def test_seed_agents_are_system_tier_and_listed_for_a_fresh_user(gateway: Gateway) -> None:
    listed = {row["id"]: row for row in gateway.user().client.get("/agents").json()}
    for seed in SEED_AGENTS:
        assert listed[seed["id"]] == {
            "id": seed["id"],
            "version": seed["version"],
            "display_name": seed["display_name"],
            "role": seed["role"],
            "source": "seed",
            "created_by": None,
            "working_group_id": None,
        }


def test_replicas_starting_on_one_database_store_each_seed_version_once(
    make_gateway: GatewayFactory, databases: DatabaseFactory, fake_provider: Any
) -> None:
    database_url = asyncio.run(databases.create())
    config = agents_test_config(fake_provider.base_url)
    first = make_gateway(config=config, database_url=database_url)
    second = make_gateway(config=config, database_url=database_url)
    for replica in (first, second):
        versions = replica.user().client.get("/agents/researcher/versions").json()["data"]
        assert [v["version"] for v in versions] == ["1"]
    first.stop()
    second.stop()


def test_a_config_agent_that_does_not_resolve_stops_the_start_naming_its_line(
    tmp_path: Path, databases: DatabaseFactory, fake_provider: Any
) -> None:
    bad = {**SEED_AGENTS[0], "model": {"kind": "alias", "alias": "no-such-alias"}}
    config = {**agents_test_config(fake_provider.base_url), "agents": [SEED_AGENTS[1], bad]}
    path = write_config(tmp_path, config)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "no-such-alias" in text)
    app = create_app(build_settings(tmp_path, asyncio.run(databases.create()), path))

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(ConfigError) as raised:
        asyncio.run(start())
    message = str(raised.value)
    assert message == f"{path}:{line}: agents.1.model: unknown model alias 'no-such-alias'"


def test_a_config_agent_with_another_source_is_refused(tmp_path: Path, fake_provider: Any) -> None:
    config = {
        **agents_test_config(fake_provider.base_url),
        "agents": [{**SEED_AGENTS[0], "id": f"x{uuid.uuid4().hex[:6]}", "source": "user"}],
    }
    path = write_config(tmp_path, config)
    app = create_app(build_settings(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/db.sqlite", path))

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(ConfigError, match=r"agents\.0\.source"):
        asyncio.run(start())


def test_a_fresh_install_lists_and_discovers_the_shipped_config_agents(make_gateway: GatewayFactory) -> None:
    shipped = (Path(__file__).parents[2] / "config" / "switchboard.yaml").read_text(encoding="utf-8")
    fresh = make_gateway(config=shipped)
    user = fresh.user()
    listed = {row["id"] for row in user.client.get("/agents").json()}
    assert listed == {"researcher", "code-reviewer", "writer"}
    hits = user.client.post("/agents/discover", json={"query": "python security"}).json()["agents"]
    assert [hit["agent_key"] for hit in hits] == ["code-reviewer"]
    fresh.stop()
