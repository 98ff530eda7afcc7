"""A killed replica's calls are recovered once, by whichever replica sweeps first (SPEC §13): their
holds and idempotency claims freed with one `abandoned` record; a live call is never taken for dead.

Two gateway processes share one database (the helpers are the replica tests' in tests/limits).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.limits.test_replicas import (
    ACTUAL,
    HOLD,
    MAX_TOKENS,
    MESSAGES,
    limit_status,
    priced_config,
    setup_caller,
    tokens,
    two_replicas,
)
from tests.support.databases import DatabaseFactory
from tests.support.recorder import tls_context


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
                    verify=tls_context(),
                )
                if response.status_code != 409:
                    break
                assert time.monotonic() < deadline, "the dead call's key was never freed"
                time.sleep(0.2)
            assert response.status_code == 200, response.text
        records = httpx.get(
            f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers, verify=tls_context()
        ).json()["data"]
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
        records = httpx.get(
            f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers, verify=tls_context()
        ).json()["data"]
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
            records = httpx.get(
                f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers, verify=tls_context()
            ).json()["data"]
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
