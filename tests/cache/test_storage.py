"""Where answers are kept (SPEC §23): in the database, sealed with the key ring and bound to their key,
for their TTL, within SWITCHBOARD_CACHE_MAX_MB (oldest evicted), counted in /metrics."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx
import openai
import pytest

from switchboard.kit.clock import utcnow
from tests.cache.conftest import METRICS_TOKEN, cache_config, credentialed, prompt, rows, set_expiry
from tests.conftest import GatewayFactory
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import unique_model
from tests.observability.samples import Samples, parse
from tests.support.gateway import Gateway
from tests.support.sdks import openai_client

LOOKUPS = "switchboard_cache_lookups_total"


def ask(openai_sdk: openai.OpenAI, model: str, messages: list[dict[str, str]], ttl: str = "ttl=60") -> str:
    raw = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}",
        messages=messages,  # type: ignore[arg-type]
        extra_headers={"x-switchboard-cache": ttl},
    )
    return str(raw.headers["x-switchboard-cache"])


def newest_key(gateway: Gateway, since: float) -> bytes:
    found = [r for r in rows(gateway) if r.created_at.timestamp() >= since - 1]
    assert found
    return found[-1].key


def test_an_entry_is_kept_for_its_ttl_and_an_expired_one_is_a_miss(
    gateway: Gateway, openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    model, messages = unique_model("ttl"), prompt()
    started = time.time()
    assert ask(openai_sdk, model, messages, "ttl=90") == "miss"
    key = newest_key(gateway, started)
    [row] = [r for r in rows(gateway) if r.key == key]
    assert row.expires_at - row.created_at == timedelta(seconds=90)
    assert ask(openai_sdk, model, messages) == "hit"
    set_expiry(gateway, row.key, utcnow() - timedelta(seconds=1))  # as the clock will see it in 90 s
    assert ask(openai_sdk, model, messages) == "miss"
    assert len(fake_provider.received(model)) == 2
    assert all(r.expires_at > utcnow() for r in rows(gateway) if r.key == row.key)  # stored anew


def test_answers_are_sealed_and_bound_to_their_key(
    gateway: Gateway, openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    model = unique_model("sealed")
    secret_text = f"answer-{model}-in-plain-text"
    fake_provider.script(model, reply=secret_text)
    first, second = prompt(), prompt()
    started = time.time()
    assert ask(openai_sdk, model, first) == "miss"
    key_one = newest_key(gateway, started)
    assert ask(openai_sdk, model, second) == "miss"
    key_two = newest_key(gateway, started)
    stored = {r.key: r.sealed for r in rows(gateway)}
    assert secret_text.encode() not in stored[key_one]
    assert ask(openai_sdk, model, first) == "hit"

    async def move() -> None:
        from sqlalchemy import update

        from switchboard.cache.models import CachedAnswerRow

        async with gateway.app.state.sessionmaker() as session, session.begin():
            await session.execute(
                update(CachedAnswerRow).where(CachedAnswerRow.key == key_two).values(sealed=stored[key_one])
            )

    gateway.server.call_soon(move())
    assert ask(openai_sdk, model, second) == "miss"  # another key's answer does not open under this one


def scrape(gateway: Gateway) -> Samples:
    response = httpx.get(f"{gateway.url}/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200
    return parse(response.text)


def test_metrics_count_hits_and_misses(gateway: Gateway, openai_sdk: openai.OpenAI) -> None:
    model, messages = unique_model("metrics"), prompt()
    before = scrape(gateway)
    ask(openai_sdk, model, messages)
    ask(openai_sdk, model, messages)
    ask(openai_sdk, model, messages)
    moved = scrape(gateway).minus(before)
    assert moved.value(LOOKUPS, result="miss") == 1
    assert moved.value(LOOKUPS, result="hit") == 2


@pytest.fixture(scope="module")
def small(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    """A cache of 10 KiB: room for two answers of about 4 KiB."""
    return make_gateway(
        config=cache_config(fake_provider.base_url), env={"SWITCHBOARD_CACHE_MAX_MB": str(10 / 1024)}
    )


def test_past_the_size_bound_the_oldest_entries_are_evicted(
    small: Gateway, fake_provider: FakeProvider
) -> None:
    model = unique_model("evict")
    fake_provider.script(model, reply="x" * 4000)
    user = credentialed(small, fake_provider, "openai")
    q1, q2, q3 = prompt(), prompt(), prompt()
    with openai_client(small, user) as openai_sdk:
        assert [ask(openai_sdk, model, q) for q in (q1, q2, q3)] == ["miss", "miss", "miss"]
        assert sum(r.size for r in rows(small)) <= 10 * 1024
        assert len(rows(small)) == 2
        assert ask(openai_sdk, model, q3) == "hit"
        assert ask(openai_sdk, model, q2) == "hit"
        assert ask(openai_sdk, model, q1) == "miss"  # the oldest went first
    assert len(fake_provider.received(model)) == 4
