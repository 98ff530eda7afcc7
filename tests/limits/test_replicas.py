"""Limits hold across replicas, and a killed replica's calls are recovered once (SPEC §13).

Two gateway processes share one database. The fake provider holds every admitted call until the
test releases it, so which calls were admitted never depends on timing: all of a wave's calls are
decided while the admitted ones still hold their reservation.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from switchboard.auth.tokens import TokenCodec
from tests.conftest import default_test_config
from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.support.recorder import RECORDER
from tests.support.served import gateway_process, served_env

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
    with ExitStack() as stack:
        started = [stack.enter_context(gateway_process(env, tmp_path / f"{n}.log")) for n in range(count)]
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
    )
    assert created.status_code == 201, created.text
    if limit is None:  # the config file declares it
        return ""
    added = httpx.post(f"{url}/limits", headers={"authorization": f"Bearer {admin}"}, json=limit)
    assert added.status_code == 201, added.text
    return str(added.json()["id"])


def limit_status(url: str, admin: str, limit_id: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/limits/{limit_id}/status", headers={"authorization": f"Bearer {admin}"})
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


def test_keyed_calls_on_a_killed_replica_are_recorded_once_ok_and_once_abandoned(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    model = f"killed-{uuid.uuid4().hex[:8]}"
    fake_provider.script(model, held=True)
    user, admin = tokens()
    limit = {"subject_type": "economy", "subject_id": "default", "metric": "cost", "window": "total"}
    keys = [f"key-{i}-{uuid.uuid4().hex[:8]}" for i in range(6)]
    with two_replicas(databases, tmp_path, priced_config(fake_provider, [model])) as (processes, urls):
        limit_id = setup_caller(urls[0], user, admin, fake_provider, {**limit, "amount": "100000000"})

        async def in_flight_then_kill() -> None:
            async with httpx.AsyncClient(
                base_url=urls[0], headers={"authorization": f"Bearer {user}"}, timeout=60
            ) as client:
                calls = [
                    asyncio.create_task(
                        client.post(
                            "/v1/chat/completions",
                            json={"model": f"openai/{model}", "messages": MESSAGES, "stream": i % 2 == 1},
                            headers={"idempotency-key": key},
                        )
                    )
                    for i, key in enumerate(keys)
                ]
                deadline = time.monotonic() + 60
                while len(fake_provider.received(model)) < len(keys):
                    early = [t.result().text for t in calls if t.done() and not t.exception()]
                    assert not early and time.monotonic() < deadline, (
                        f"the calls never reached the provider: {early}"
                    )
                    await asyncio.sleep(0.05)
                os.kill(processes[0].pid, signal.SIGKILL)
                results = await asyncio.gather(*calls, return_exceptions=True)
                assert all(isinstance(r, httpx.TransportError) for r in results)

        asyncio.run(in_flight_then_kill())
        assert processes[0].wait(timeout=10) == -signal.SIGKILL
        assert int(limit_status(urls[1], admin, limit_id)["reserved"]) > 0
        fake_provider.release(model)
        headers = {"authorization": f"Bearer {user}"}
        for i, key in enumerate(keys):
            deadline = time.monotonic() + 60
            while True:  # 409 until the dead call's lease (3 s) runs out and recovery frees the key
                response = httpx.post(
                    f"{urls[1]}/v1/chat/completions",
                    json={"model": f"openai/{model}", "messages": MESSAGES, "stream": i % 2 == 1},
                    headers={**headers, "idempotency-key": key},
                    timeout=60,
                )
                if response.status_code != 409:
                    break
                assert time.monotonic() < deadline, "the dead call's key was never freed"
                time.sleep(0.2)
            assert response.status_code == 200, response.text
        records = httpx.get(f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers).json()["data"]
        final = limit_status(urls[1], admin, limit_id)
    for key in keys:
        mine = sorted((r["status"], r["error_code"]) for r in records if r["idempotency_key"] == key)
        assert mine == [("abandoned", "gateway_crashed"), ("ok", None)], (key, mine)
    assert final["reserved"] == "0"
    assert final["used"] == str(len(keys) * ACTUAL)


def test_a_call_that_outlives_several_leases_keeps_its_hold_and_is_never_taken_for_dead(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """The upkeep loop renews every live call's holds (lease 3 s here); a call held for three
    leases is still reserved, then settles once as `ok`, never `abandoned`."""
    model = f"long-{uuid.uuid4().hex[:8]}"
    fake_provider.script(model, held=True)
    user, admin = tokens()
    limit = {"subject_type": "economy", "subject_id": "default", "metric": "cost", "window": "total"}
    headers = {"authorization": f"Bearer {user}"}
    with two_replicas(databases, tmp_path, priced_config(fake_provider, [model])) as (_, urls):
        limit_id = setup_caller(urls[0], user, admin, fake_provider, {**limit, "amount": "100000000"})

        async def long_call() -> httpx.Response:
            async with httpx.AsyncClient(base_url=urls[0], headers=headers, timeout=60) as client:
                call = asyncio.create_task(
                    client.post(
                        "/v1/chat/completions",
                        json={"model": f"openai/{model}", "messages": MESSAGES, "max_tokens": MAX_TOKENS},
                    )
                )
                deadline = time.monotonic() + 30
                while not fake_provider.received(model):
                    assert time.monotonic() < deadline and not call.done()
                    await asyncio.sleep(0.05)
                await asyncio.sleep(9)  # three leases: without renewal, either replica would recover it
                assert limit_status(urls[1], admin, limit_id)["reserved"] == str(HOLD)
                fake_provider.release(model)
                return await call

        response = asyncio.run(long_call())
        assert response.status_code == 200, response.text
        records = httpx.get(f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers).json()["data"]
        final = limit_status(urls[1], admin, limit_id)
    assert [(r["status"], r["error_code"]) for r in records if r["model"] == model] == [("ok", None)]
    assert final["reserved"] == "0" and final["used"] == str(ACTUAL)


def test_a_call_killed_in_a_later_attempt_is_recorded_abandoned_with_that_attempt_and_model(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """The first model answers 500, the call falls back to the second, which holds the call; the
    replica dies there. The abandoned record names attempt 2 and the second model."""
    first, second = f"first-{uuid.uuid4().hex[:8]}", f"second-{uuid.uuid4().hex[:8]}"
    fake_provider.script(first, fail="server_error")
    fake_provider.script(second, held=True)
    config = priced_config(fake_provider, [first, second])
    config["fallbacks"] = {f"openai/{first}": [f"openai/{second}"]}
    user, admin = tokens()
    limit = {"subject_type": "economy", "subject_id": "default", "metric": "cost", "window": "total"}
    headers = {"authorization": f"Bearer {user}"}
    key = f"key-{uuid.uuid4().hex[:8]}"
    with two_replicas(databases, tmp_path, config) as (processes, urls):
        setup_caller(urls[0], user, admin, fake_provider, {**limit, "amount": "100000000"})

        async def killed_in_attempt_two() -> None:
            async with httpx.AsyncClient(base_url=urls[0], headers=headers, timeout=60) as client:
                call = asyncio.create_task(
                    client.post(
                        "/v1/chat/completions",
                        json={"model": f"openai/{first}", "messages": MESSAGES, "max_tokens": MAX_TOKENS},
                        headers={"idempotency-key": key},
                    )
                )
                deadline = time.monotonic() + 30
                while not fake_provider.received(second):
                    assert time.monotonic() < deadline and not call.done(), "the call never fell back"
                    await asyncio.sleep(0.05)
                os.kill(processes[0].pid, signal.SIGKILL)
                assert isinstance(
                    (await asyncio.gather(call, return_exceptions=True))[0], httpx.TransportError
                )

        asyncio.run(killed_in_attempt_two())
        assert processes[0].wait(timeout=10) == -signal.SIGKILL
        fake_provider.release(second)
        deadline = time.monotonic() + 60
        while True:  # the dead call's lease (3 s) runs out, then the other replica recovers it
            records = httpx.get(f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers).json()["data"]
            abandoned = [r for r in records if r["status"] == "abandoned"]
            if abandoned:
                break
            assert time.monotonic() < deadline, "the dead call was never recovered"
            time.sleep(0.2)
    [record] = abandoned
    assert (record["attempt"], record["model"], record["idempotency_key"]) == (2, second, key)
    assert record["error_code"] == "gateway_crashed"
    [failed] = [r for r in records if r["status"] == "error"]
    assert (failed["attempt"], failed["model"]) == (1, first)
