"""A hit counts as a request for limits and costs nothing against a cost limit (SPEC §23); entries
are shared by replicas on one database (PostgreSQL: SWITCHBOARD_TEST_DB=postgres)."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.cache.conftest import ASK, CACHED_MODEL, cache_config, credentialed, prompt
from tests.conftest import GatewayFactory
from tests.fakes.provider import FakeProvider
from tests.limits.conftest import create_limit
from tests.llm.conftest import unique_model
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway
from tests.support.gateway import test_encryption_keys as encryption_keys
from tests.support.sdks import openai_client


def ask(sdk: openai.OpenAI, model: str, messages: list[dict[str, str]]) -> str:
    raw = sdk.chat.completions.with_raw_response.create(
        model=model,
        messages=messages,  # type: ignore[arg-type]
        extra_headers=ASK,
    )
    return str(raw.headers["x-switchboard-cache"])


def test_a_hit_counts_against_a_requests_limit(gateway: Gateway, fake_provider: FakeProvider) -> None:
    user = credentialed(gateway, fake_provider, "openai")
    admin = gateway.user(role="Admin")
    create_limit(admin.client, subject_type="user", subject_id=str(user.id), metric="requests", amount="2")
    model, messages = f"openai/{unique_model('limited')}", prompt()
    with openai_client(gateway, user) as sdk:
        assert [ask(sdk, model, messages), ask(sdk, model, messages)] == ["miss", "hit"]
        with pytest.raises(openai.RateLimitError):
            ask(sdk, model, messages)


def test_a_hit_is_served_when_the_cost_limit_is_spent(gateway: Gateway, fake_provider: FakeProvider) -> None:
    user = credentialed(gateway, fake_provider, "openai")
    admin = gateway.user(role="Admin")
    model, messages = f"openai/{CACHED_MODEL}", prompt()
    with openai_client(gateway, user) as sdk:
        assert ask(sdk, model, messages) == "miss"
        create_limit(
            admin.client,
            subject_type="user",
            subject_id=str(user.id),
            metric="cost",
            window="total",
            amount="1",
        )
        assert ask(sdk, model, messages) == "hit"  # free: the spent budget does not stand in its way
        with pytest.raises(openai.APIStatusError) as raised:
            ask(sdk, model, prompt())  # a question not yet answered is a provider call: refused
        assert raised.value.status_code == 402


@pytest.fixture(scope="module")
def replicas(
    make_gateway: GatewayFactory, databases: DatabaseFactory, fake_provider: FakeProvider
) -> tuple[Gateway, Gateway]:
    shared = asyncio.run(databases.create())
    config = cache_config(fake_provider.base_url)
    env = {"SWITCHBOARD_ENCRYPTION_KEYS": encryption_keys("k1")}  # one key ring, as replicas share
    return (
        make_gateway(config=config, database_url=shared, env=env),
        make_gateway(config=config, database_url=shared, env=env),
    )


def test_an_answer_stored_by_one_replica_is_a_hit_on_the_other(
    replicas: tuple[Gateway, Gateway], fake_provider: FakeProvider
) -> None:
    a, b = replicas
    user = credentialed(a, fake_provider, "openai")
    model, messages = unique_model("replica"), prompt()
    with openai_client(a, user) as on_a, openai_client(b, user) as on_b:
        assert ask(on_a, f"openai/{model}", messages) == "miss"
        assert ask(on_b, f"openai/{model}", messages) == "hit"
        assert ask(on_a, f"openai/{model}", messages) == "hit"
    assert len(fake_provider.received(model)) == 1
