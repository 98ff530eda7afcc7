"""A gateway process killed with SIGKILL mid-load loses no record of a completed call and doubles none."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path
from typing import Any

import httpx
import orjson

from switchboard.auth.tokens import TokenCodec
from tests.metering.conftest import metering_config
from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.support.recorder import RECORDER
from tests.support.served import gateway_process, served_env

CALLS = 200
MODELS = 10  # model i answers after 0.2 * i seconds, so completions spread over ~2 s ...
# ... except the last, which answers only long after the kill: however slow a busy machine makes the
# first third of the calls, a tenth of them are still in flight when the gateway is killed.
LAST_MODEL_DELAY = 60.0


async def load_then_kill(url: str, token: str, models: list[str], pid: int) -> tuple[set[str], int]:
    """Fire CALLS concurrent calls (half streamed); SIGKILL the gateway once a third completed."""
    completed: set[str] = set()
    enough = asyncio.Event()

    async def call(client: httpx.AsyncClient, index: int) -> None:
        request_id = f"crash-{index}-{uuid.uuid4().hex[:8]}"
        stream = index % 2 == 1
        body = {
            "model": f"openai/{models[index % MODELS]}",
            "stream": stream,
            "messages": [{"role": "user", "content": "hi"}],
        }
        try:
            async with client.stream(
                "POST", "/v1/chat/completions", json=body, headers={"x-request-id": request_id}
            ) as response:
                raw = await response.aread()
            finished = response.status_code == 200 and (
                raw.endswith(b"data: [DONE]\n\n") if stream else "choices" in orjson.loads(raw)
            )
        except (httpx.TransportError, orjson.JSONDecodeError):
            finished = False
        if finished:
            completed.add(request_id)
            if len(completed) >= CALLS // 3:
                enough.set()

    limits = httpx.Limits(max_connections=CALLS, max_keepalive_connections=CALLS)
    async with httpx.AsyncClient(
        base_url=url, headers={"authorization": f"Bearer {token}"}, limits=limits, timeout=30
    ) as client:
        calls = [asyncio.create_task(call(client, i)) for i in range(CALLS)]
        await asyncio.wait_for(enough.wait(), 60)
        os.kill(pid, signal.SIGKILL)
        await asyncio.gather(*calls)
    return completed, CALLS - len(completed)


def test_sigkill_mid_load_loses_no_completed_call_and_doubles_none(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    env = served_env(databases, tmp_path, metering_config(fake_provider.base_url))
    codec = TokenCodec(support.TEST_JWT_SECRET, support.TEST_AUDIENCE)
    token = codec.mint(sub=uuid.uuid4(), role="User")
    admin = codec.mint(sub=uuid.uuid4(), role="Admin")
    models = [f"crash-{uuid.uuid4().hex[:8]}-{i}" for i in range(MODELS)]
    for i, model in enumerate(models):
        fake_provider.script(model, first_byte_delay=LAST_MODEL_DELAY if i == MODELS - 1 else 0.2 * i)
    log = tmp_path / "gateway.log"
    try:
        with gateway_process(env, log) as (process, url):
            secret = RECORDER.remember_secret(f"sk-crash-{uuid.uuid4().hex}")
            created = httpx.post(
                f"{url}/llm-credentials",
                headers={"authorization": f"Bearer {token}"},
                json={"provider": "openai", "secret": secret, "base_url": f"{fake_provider.base_url}/v1"},
            )
            assert created.status_code == 201, created.text
            completed, unfinished = asyncio.run(load_then_kill(url, token, models, process.pid))
            assert process.wait(timeout=10) == -signal.SIGKILL
        assert unfinished > 0, "the kill came after every call had finished: nothing was tested"

        with gateway_process(env, log) as (_, url):
            records: list[dict[str, Any]] = []
            cursor = None
            while True:
                params = {"limit": 500} | ({"cursor": cursor} if cursor else {})
                page = httpx.get(
                    f"{url}/economies/default/usage",
                    params=params,
                    headers={"authorization": f"Bearer {admin}"},
                ).json()
                records += page["data"]
                if (cursor := page["next_cursor"]) is None:
                    break
    finally:
        for model in models:
            fake_provider.script(model)

    by_request: dict[str, int] = {}
    for record in records:
        by_request[record["request_id"]] = by_request.get(record["request_id"], 0) + 1
    assert {rid: n for rid, n in by_request.items() if n != 1} == {}, "a call was counted twice"
    lost = sorted(rid for rid in completed if rid not in by_request)
    assert lost == [], f"{len(lost)} completed calls have no record"
    assert all(by_request.get(rid) == 1 for rid in completed)
    ok = {r["request_id"] for r in records if r["status"] == "ok"}
    assert completed <= ok
