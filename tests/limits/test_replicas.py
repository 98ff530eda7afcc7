"""Limits hold across replicas (SPEC §13); recovery of a killed replica's calls: tests/settlement.

Two gateway processes share one database. The fake provider holds every admitted call until the
test releases it, so which calls were admitted never depends on timing: all of a wave's calls are
decided while the admitted ones still hold their reservation.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from switchboard.auth.tokens import TokenCodec
from tests.conftest import default_test_config
from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.support.recorder import RECORDER, tls_context
from tests.support.served import gateway_processes, served_env

PRICES = {"input_per_mtok": "0.15", "output_per_mtok": "0.60"}  # 150 and 600 nano-units a token
MESSAGES = [{"role": "user", "content": "x" * 40}]
MAX_TOKENS = 20
# The prompt's bound (llm/prompt_bound.py): its bytes, keys included ("role" 4, "content" 7, "user"
# 4 + 1, the text 40 + 1), 8 for the message and 32 for the request. The fake provider bills 11.
PROMPT_BOUND = 4 + 7 + 5 + 41 + 8 + 32
HOLD = PROMPT_BOUND * 150 + MAX_TOKENS * 600  # what each call reserves: 26,550
ACTUAL = 11 * 150 + 7 * 600  # what each call costs (11 in, 7 out): 5,850
AMOUNT = 10 * HOLD


@contextmanager
def two_replicas(
    databases: DatabaseFactory, tmp_path: Path, config: dict[str, Any]
) -> Iterator[tuple[list[Any], list[str]]]:
    with replicas(databases, tmp_path, config, 2) as running:
        yield running


@contextmanager
def replicas(
    databases: DatabaseFactory, tmp_path: Path, config: dict[str, Any], count: int
) -> Iterator[tuple[list[Any], list[str]]]:
    """`count` gateway processes on one new database: their processes and their URLs."""
    env = served_env(databases, tmp_path, config, SWITCHBOARD_LEASE_SECONDS="3")
    with gateway_processes(env, [tmp_path / f"{n}.log" for n in range(count)]) as started:
        yield [process for process, _ in started], [url for _, url in started]


def priced_config(fake_provider: Any, models: list[str]) -> dict[str, Any]:
    config = default_test_config(fake_provider.base_url)
    overrides = {f"openai/{model}": PRICES for model in models}
    config["economies"] = [{"slug": "default", "name": "Default", "price_overrides": overrides}]
    return config


def tokens() -> tuple[str, str]:
    codec = TokenCodec(support.TEST_JWT_SECRET, support.TEST_AUDIENCE)
    return codec.mint(sub=uuid.uuid4(), role="User"), codec.mint(sub=uuid.uuid4(), role="Admin")


def setup_caller(url: str, user: str, admin: str, fake_provider: Any, limit: dict[str, Any] | None) -> str:
    secret = RECORDER.remember_secret(f"sk-limits-{uuid.uuid4().hex}")
    created = httpx.post(
        f"{url}/llm-credentials",
        headers={"authorization": f"Bearer {user}"},
        json={"provider": "openai", "secret": secret, "base_url": f"{fake_provider.base_url}/v1"},
        verify=tls_context(),
    )
    assert created.status_code == 201, created.text
    if limit is None:  # the config file declares it
        return ""
    added = httpx.post(
        f"{url}/limits", headers={"authorization": f"Bearer {admin}"}, json=limit, verify=tls_context()
    )
    assert added.status_code == 201, added.text
    return str(added.json()["id"])


def limit_status(url: str, admin: str, limit_id: str) -> dict[str, Any]:
    response = httpx.get(
        f"{url}/limits/{limit_id}/status", headers={"authorization": f"Bearer {admin}"}, verify=tls_context()
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


async def wave(
    urls: list[str],
    user: str,
    model: str,
    calls: int,
    fake_provider: Any,
    messages: list[dict[str, Any]] = MESSAGES,
    max_tokens: int = MAX_TOKENS,
) -> dict[int, int]:
    """`calls` concurrent calls spread over the replicas; returns how many ended with each status."""
    body = {"model": f"openai/{model}", "messages": messages, "max_tokens": max_tokens}
    clients = [
        httpx.AsyncClient(base_url=url, headers={"authorization": f"Bearer {user}"}, timeout=60)
        for url in urls
    ]
    try:
        tasks = [
            asyncio.create_task(clients[i % len(clients)].post("/v1/chat/completions", json=body))
            for i in range(calls)
        ]
        # Every call is decided once each has been refused or has reached the (holding) provider.
        deadline = time.monotonic() + 60
        while sum(t.done() for t in tasks) + len(fake_provider.received(model)) < calls:
            assert time.monotonic() < deadline, "the calls were never all decided"
            await asyncio.sleep(0.05)
        admitted_while_held = len(fake_provider.received(model))
        fake_provider.release(model)
        responses = await asyncio.gather(*tasks)
    finally:
        for client in clients:
            await client.aclose()
    counts: dict[int, int] = {}
    for response in responses:
        counts[response.status_code] = counts.get(response.status_code, 0) + 1
        if response.status_code == 402:
            assert response.json()["error"]["code"] == "budget_exceeded"
    assert counts.get(200, 0) == admitted_while_held
    return counts


def test_forty_concurrent_calls_on_two_replicas_spend_exactly_what_the_limit_allows(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    first, second = f"wave1-{uuid.uuid4().hex[:8]}", f"wave2-{uuid.uuid4().hex[:8]}"
    for model in (first, second):
        fake_provider.script(model, held=True)
    user, admin = tokens()
    limit = {"subject_type": "economy", "subject_id": "default", "metric": "cost", "window": "month"}
    config = priced_config(fake_provider, [first, second])
    # Declared in the config file, the limit applies on both replicas from their start: nothing to wait for.
    config["limits"] = [{**limit, "amount": str(AMOUNT)}]
    with two_replicas(databases, tmp_path, config) as (_, urls):
        setup_caller(urls[0], user, admin, fake_provider, None)
        listed = httpx.get(
            f"{urls[1]}/limits",
            params={"subject_type": "economy"},
            headers={"authorization": f"Bearer {admin}"},
            verify=tls_context(),
        )
        assert listed.status_code == 200, listed.text
        (limit_id,) = [item["id"] for item in listed.json()["data"] if item["amount"] == str(AMOUNT)]
        counts = asyncio.run(wave(urls, user, first, 40, fake_provider))
        assert counts == {200: 10, 402: 30}  # every call that fit, and no other
        after_first = limit_status(urls[1], admin, limit_id)
        assert (after_first["used"], after_first["reserved"]) == (str(10 * ACTUAL), "0")

        counts = asyncio.run(wave(urls, user, second, 40, fake_provider))
        left = AMOUNT - 10 * ACTUAL
        assert counts == {200: left // HOLD, 402: 40 - left // HOLD}
        settled = limit_status(urls[0], admin, limit_id)
        assert int(settled["used"]) == (10 + left // HOLD) * ACTUAL <= AMOUNT
        assert settled["reserved"] == "0"
