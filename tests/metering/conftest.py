"""Metering fixtures: a gateway with priced economies, and factories for economies and call outcomes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from switchboard.kit.clock import utcnow
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.outcome import CallOutcome
from tests.conftest import GatewayFactory, default_test_config
from tests.support.gateway import Gateway, User

TEAM_MARKUP_BPS = 2500
# The team economy prices gpt-4o-mini itself and marks everything up by 25 %.
TEAM_OVERRIDE = {"input_per_mtok": "1.10", "output_per_mtok": "2.20"}


def metering_config(provider_url: str) -> dict[str, Any]:
    config = default_test_config(provider_url)
    config["economies"] = [
        {"slug": "default", "name": "Default", "currency": "USD"},
        {
            "slug": "team",
            "name": "Team",
            "currency": "USD",
            "markup_bps": TEAM_MARKUP_BPS,
            "price_overrides": {"openai/gpt-4o-mini": TEAM_OVERRIDE},
            "budget": "5000000000",
        },
    ]
    return config


@pytest.fixture(scope="session")
def metering_gateway(make_session_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    """Shared by the metering tests; each test isolates itself with fresh users and economies."""
    return make_session_gateway(config=metering_config(fake_provider.base_url))


@pytest.fixture()
def admin(metering_gateway: Gateway) -> User:
    return metering_gateway.user(role="Admin")


EconomyFactory = Callable[..., dict[str, Any]]


@pytest.fixture()
def make_economy(admin: User) -> EconomyFactory:
    def create(**fields: Any) -> dict[str, Any]:
        body = {"slug": f"e-{uuid.uuid4().hex[:10]}", "name": "Test economy", **fields}
        response = admin.client.post("/economies", json=body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    return create


def add_participant(client: Any, economy: str, **body: Any) -> None:
    response = client.post(f"/economies/{economy}/participants", json=body)
    assert response.status_code in (200, 201), response.text


def make_outcome(economy_id: uuid.UUID | str, user_id: uuid.UUID, **fields: Any) -> CallOutcome:
    values: dict[str, Any] = {
        "request_id": uuid.uuid4().hex,
        "occurred_at": utcnow(),
        "economy_id": uuid.UUID(str(economy_id)),
        "user_id": user_id,
        "provider": "openai",
        "model": "gpt-4o-mini",
        "selector": "openai/gpt-4o-mini",
        "endpoint": "/v1/chat/completions",
        "credential_scope": "user",
        "credential_id": uuid.uuid4(),
        "prompt_tokens": 1000,
        "completion_tokens": 500,
        "latency_ms": 120,
        "ttft_ms": 40,
    }
    values.update(fields)
    return CallOutcome(**values)


def record(gateway: Gateway, outcomes: Sequence[CallOutcome]) -> None:
    """Hand outcomes to the gateway's call sink concurrently, on its own loop, and wait for all."""

    async def run() -> None:
        await asyncio.gather(*(gateway.app.state.call_sink.record(o) for o in outcomes))

    gateway.server.call_soon(run(), timeout=120)


def count_records(gateway: Gateway, **where: Any) -> int:
    async def run() -> int:
        async with gateway.app.state.sessionmaker() as session:
            query = select(func.count()).select_from(UsageRecordRow).filter_by(**where)
            return int(await session.scalar(query) or 0)

    return int(gateway.server.call_soon(run()))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


@asynccontextmanager
async def usage_table_locked(app: Any) -> AsyncIterator[None]:
    """Hold a lock that makes every insert into usage_records wait until the block ends."""
    engine = app.state.engine
    if engine.dialect.name == "postgresql":
        # A connection of the test's own: the gateway's small test budget stays for the calls.
        holder = create_async_engine(engine.url, poolclass=NullPool)
        try:
            async with holder.begin() as conn:
                await conn.execute(text("LOCK TABLE usage_records IN SHARE MODE"))
                yield
        finally:
            await holder.dispose()
        return
    async with app.state.sessionmaker() as session, session.begin():
        # SQLite: any write takes the database's single write lock
        await session.execute(text("UPDATE economies SET name = name WHERE slug = 'default'"))
        yield
