"""Pooled keys in a server of several workers (`switchboard serve --workers 2`): the least busy key
is the least busy in the whole server, not in the worker that happens to take the call."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx

from switchboard.auth.tokens import TokenCodec
from tests.conftest import default_test_config
from tests.llm.conftest import provider_base
from tests.routing.conftest import key
from tests.serving.test_supervisor import SWITCHBOARD, _answers, _free_port, _stop, _wait_until
from tests.support.databases import DatabaseFactory
from tests.support.gateway import TEST_AUDIENCE, TEST_JWT_SECRET, write_config
from tests.support.gateway import test_encryption_keys as encryption_keys

SHORT_CALLS = 6  # each on a new connection: the workers take them in turn, or nearly


def _serve_two_workers(
    tmp_path: Path, database_url: str, provider_url: str
) -> tuple[subprocess.Popen[bytes], int]:
    config = write_config(tmp_path, default_test_config(provider_url))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(
        SWITCHBOARD_ENV="development",
        SWITCHBOARD_DATA_DIR=str(tmp_path / "var"),
        SWITCHBOARD_DATABASE_URL=database_url,
        SWITCHBOARD_JWT_SECRET=TEST_JWT_SECRET,
        SWITCHBOARD_ENCRYPTION_KEYS=encryption_keys("k1"),
        SWITCHBOARD_CONFIG=str(config),
        SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS="true",
    )
    port = _free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(SWITCHBOARD), "serve", "--port", str(port), "--workers", "2"],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _wait_until(lambda: _answers(port), process, log_path, 60)
    return process, port


def test_a_key_streaming_on_one_worker_is_busy_for_every_worker(
    tmp_path: Path, databases: DatabaseFactory, fake_provider: Any
) -> None:
    database_url = asyncio.run(databases.create(migrated=True))
    process, port = _serve_two_workers(tmp_path, database_url, fake_provider.base_url)
    try:
        token = TokenCodec(TEST_JWT_SECRET, TEST_AUDIENCE).mint(sub=uuid.uuid4(), role="User")
        base, auth = f"http://127.0.0.1:{port}", {"authorization": f"Bearer {token}"}
        client = httpx.Client(base_url=base, headers=auth, timeout=20)
        ids = []
        for _ in range(2):
            body = {"provider": "openai", "secret": key(), "base_url": provider_base(fake_provider, "openai")}
            created = client.post("/llm-credentials", json=body)
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
        model = f"gpt-long-{uuid.uuid4().hex[:8]}"
        fake_provider.enqueue(model, stall_after=1)  # the first call: one event, then silence
        call = {"model": f"openai/{model}", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with client.stream("POST", "/v1/chat/completions", json=call) as opened:
            lines = opened.iter_lines()  # kept: a dropped iterator would close the stream
            assert next(lines).startswith("data: ")
            busy = opened.headers["x-switchboard-credential"]
            [idle] = [c for c in ids if c != busy]
            used = []
            for _ in range(SHORT_CALLS):  # one after another, each ended before the next starts
                with httpx.Client(base_url=base, headers=auth, timeout=20) as fresh:
                    answer = fresh.post("/v1/chat/completions", json=call)
                assert answer.status_code == 200, answer.text
                assert answer.text.rstrip().endswith("data: [DONE]")
                used.append(answer.headers["x-switchboard-credential"])
            assert used == [idle] * SHORT_CALLS
        client.close()
    finally:
        _stop(process)
