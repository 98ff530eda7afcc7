"""A gateway of the cache's own (a cached catalog model and a cached alias, a metrics token), callers
with credentials on the fake provider, and reads of the cache's table."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select, update

from switchboard.cache.models import CachedAnswerRow
from tests.conftest import GatewayFactory, default_test_config
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import add_credential, provider_base
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER

METRICS_TOKEN = RECORDER.remember_secret(f"metrics-{uuid.uuid4().hex}")
CACHED_MODEL = "cached-model"  # openai/cached-model: `cache: {ttl_s: 600}` in the catalog
PLAIN_MODEL = "plain-model"  # openai/plain-model: no cache setting
CACHED_ALIAS = "remembered"  # an alias of plain-model with `cache: {ttl_s: 300}`
ASK = {"x-switchboard-cache": "ttl=60"}


def cache_config(provider_url: str) -> dict[str, Any]:
    config = default_test_config(provider_url)
    config["models"] += [
        {
            "provider": "openai",
            "model": CACHED_MODEL,
            "input_per_mtok": "1",
            "output_per_mtok": "2",
            "cache": {"ttl_s": 600},
        },
        {"provider": "openai", "model": PLAIN_MODEL, "input_per_mtok": "1", "output_per_mtok": "2"},
    ]
    config["aliases"][CACHED_ALIAS] = {"target": f"openai/{PLAIN_MODEL}", "cache": {"ttl_s": 300}}
    return config


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    return make_gateway(
        config=cache_config(fake_provider.base_url), env={"SWITCHBOARD_METRICS_TOKEN": METRICS_TOKEN}
    )


def credentialed(gateway: Gateway, fake_provider: FakeProvider, *kinds: str) -> User:
    user = gateway.user()
    for kind in kinds or ("openai", "anthropic"):
        add_credential(user, kind, provider_base(fake_provider, kind))
    return user


@pytest.fixture
def user(gateway: Gateway, fake_provider: FakeProvider) -> User:
    return credentialed(gateway, fake_provider)


def prompt() -> list[dict[str, str]]:
    """A question no other test asks: entries of one test never answer another's."""
    return [{"role": "user", "content": f"question {uuid.uuid4().hex}"}]


def rows(gateway: Gateway) -> list[CachedAnswerRow]:
    async def run() -> list[CachedAnswerRow]:
        async with gateway.app.state.sessionmaker() as session:
            return list(await session.scalars(select(CachedAnswerRow).order_by(CachedAnswerRow.created_at)))

    return list(gateway.server.call_soon(run()))


def set_expiry(gateway: Gateway, key: bytes, when: datetime) -> None:
    async def run() -> None:
        async with gateway.app.state.sessionmaker() as session, session.begin():
            await session.execute(
                update(CachedAnswerRow).where(CachedAnswerRow.key == key).values(expires_at=when)
            )

    gateway.server.call_soon(run())
