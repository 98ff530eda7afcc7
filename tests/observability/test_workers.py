"""A real `switchboard serve --workers 2`: every scrape, whichever worker answers it, reports the calls
of both workers, by exactly their amounts (SPEC §17)."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from switchboard.auth.tokens import TokenCodec
from tests.conftest import default_test_config
from tests.observability.samples import Samples, parse
from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.support.recorder import RECORDER, tls_context
from tests.support.served import gateway_process, served_env

METRICS_TOKEN = RECORDER.remember_secret(f"metrics-{uuid.uuid4().hex}")
WAVE = 16  # concurrent calls, each on its own connection: both workers take some
CHAT = {
    "gen_ai_provider_name": "openai",
    "gen_ai_request_model": "gpt-4o-mini",
    "gen_ai_operation_name": "chat",
}
COST = 11 * 150 + 7 * 600


def server(
    env: dict[str, str], log: Path, workers: int
) -> AbstractContextManager[tuple[subprocess.Popen[bytes], str]]:
    return gateway_process(env, log, "--workers", str(workers))


def workers_of(pid: int) -> list[int]:
    """The server's worker processes (not multiprocessing's resource tracker, also its child)."""
    children = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [
        child for child in children if b"resource_tracker" not in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


def metrics_dir(worker: int) -> Path:
    environ = Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
    (entry,) = [e for e in environ if e.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return Path(entry.split(b"=", 1)[1].decode())


def one_workers_samples(directory: Path, worker: int, scratch: Path) -> Samples:
    """What one worker alone has counted: its files, collected apart from the others'."""
    alone = scratch / str(worker)
    shutil.rmtree(alone, ignore_errors=True)
    alone.mkdir(parents=True)
    for file in directory.glob(f"*_{worker}.db"):
        shutil.copy(file, alone / file.name)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(alone))
    return parse(generate_latest(registry).decode())


async def wave(url: str, token: str, streams: int) -> int:
    """WAVE calls at once, `streams` of them streamed; returns how many answered 200."""
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}

    async def call(index: int) -> bool:
        # A client per call: a connection of its own, so the kernel hands calls to both workers.
        headers = {"authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, verify=tls_context()) as client:
            response = await client.post("/v1/chat/completions", json={**body, "stream": index < streams})
            return response.status_code == 200

    return sum(await asyncio.gather(*(call(i) for i in range(WAVE))))


def scrape(url: str) -> Samples:
    # A new connection each time: successive scrapes land on either worker.
    response = httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200, response.text
    return parse(response.text)


def test_every_scrape_of_a_two_worker_server_adds_up_both_workers_exactly(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    env = served_env(
        databases,
        tmp_path,
        default_test_config(fake_provider.base_url),
        SWITCHBOARD_METRICS_TOKEN=METRICS_TOKEN,
    )
    token = TokenCodec(support.TEST_JWT_SECRET, support.TEST_AUDIENCE).mint(sub=uuid.uuid4(), role="User")
    secret = RECORDER.remember_secret(f"sk-workers-{uuid.uuid4().hex}")
    with server(env, tmp_path / "serve.log", workers=2) as (process, url):
        created = httpx.post(
            f"{url}/llm-credentials",
            headers={"authorization": f"Bearer {token}"},
            json={"provider": "openai", "secret": secret, "base_url": f"{fake_provider.base_url}/v1"},
        )
        assert created.status_code == 201, created.text
        workers = workers_of(process.pid)
        assert len(workers) == 2
        directory = metrics_dir(workers[0])
        assert directory == metrics_dir(workers[1]) and directory.is_dir()

        calls = streamed = 0
        per_worker: list[float] = [0, 0]
        for _ in range(20):  # until both workers have served calls (each wave usually suffices)
            calls += asyncio.run(wave(url, token, streams=WAVE // 4))
            streamed += WAVE // 4
            per_worker = [
                one_workers_samples(directory, worker, tmp_path / "alone").total("switchboard_requests_total")
                for worker in workers
            ]
            if all(per_worker):
                break
        assert all(per_worker), f"one worker served every call: {per_worker}"
        assert calls == WAVE * (streamed // (WAVE // 4))  # every call answered
        # A worker counts a request once its answer has gone out (access.request_ended): on a busy
        # machine the wave's last count can land a moment after its client read the answer.
        deadline = time.monotonic() + 30
        while sum(per_worker) < calls and time.monotonic() < deadline:
            time.sleep(0.1)
            per_worker = [
                one_workers_samples(directory, worker, tmp_path / "alone").total("switchboard_requests_total")
                for worker in workers
            ]
        assert sum(per_worker) == calls

        for _ in range(8):  # whichever worker answers, the whole server's figures
            seen = scrape(url)
            assert (
                seen.value("switchboard_requests_total", endpoint="chat.completions", status="200") == calls
            )
            assert seen.value("gen_ai_server_request_duration_seconds_count", **CHAT, error_type="") == calls
            assert seen.value("gen_ai_server_time_to_first_token_seconds_count", **CHAT) == streamed
            assert (
                seen.value("gen_ai_client_token_usage_sum", **CHAT, gen_ai_token_type="input") == 11 * calls
            )
            assert (
                seen.value("gen_ai_client_token_usage_sum", **CHAT, gen_ai_token_type="output") == 7 * calls
            )
            assert seen.total("switchboard_cost_total") == COST * calls
            assert seen.value("switchboard_streams_in_flight") == 0

        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert not directory.exists()  # each server's directory is its own, removed when it stops
