"""A test-only router mounted on a real gateway: routes that count executions, sleep, fail or crash."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from switchboard.app import create_app
from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.auth.tokens import TokenCodec
from switchboard.errors import ServiceUnavailable
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway, TokenFactory, build_settings, stop_gateways, write_config
from tests.support.servers import ServerThread


class Executions:
    """How many times each named item was really executed, across every gateway in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def bump(self, name: str) -> int:
        with self._lock:
            self._counts[name] += 1
            return self._counts[name]

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._counts[name]


EXECUTIONS = Executions()


class Item(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    count: int = Field(default=1, ge=0, le=1000)


probe_router = APIRouter(tags=["Probe"])


@probe_router.get("/probe/me", operation_id="probeMe_Probe")
async def probe_me(principal: CurrentPrincipal) -> dict[str, str]:
    return {"sub": str(principal.user_id)}


@probe_router.post("/probe/items", status_code=201, operation_id="probeCreate_Probe")
async def probe_create(
    item: Item, principal: CurrentPrincipal, response: Response, delay: float = 0
) -> dict[str, Any]:
    execution = EXECUTIONS.bump(item.name)
    if delay:
        await asyncio.sleep(delay)
    response.headers["location"] = f"/probe/items/{item.name}"
    response.headers["x-switchboard-probe"] = str(execution)
    return {"name": item.name, "count": item.count, "execution": execution, "sub": str(principal.user_id)}


@probe_router.post("/probe/flaky", operation_id="probeFlaky_Probe")
async def probe_flaky(item: Item, principal: CurrentPrincipal) -> dict[str, Any]:
    """Fails with 503 on its first execution per name, then succeeds."""
    execution = EXECUTIONS.bump(item.name)
    if execution == 1:
        raise ServiceUnavailable("try again")
    return {"name": item.name, "execution": execution}


@probe_router.post("/probe/crash", operation_id="probeCrash_Probe")
async def probe_crash(item: Item, principal: CurrentPrincipal) -> dict[str, Any]:
    """Crashes with an unhandled exception on its first execution per name."""
    if EXECUTIONS.bump(item.name) == 1:
        raise RuntimeError(f"boom: internal detail {item.name} /srv/app/secret.py line 42")
    return {"name": item.name, "execution": EXECUTIONS[item.name]}


@probe_router.post("/probe/anonymous", operation_id="probeAnonymous_Probe")
async def probe_anonymous(item: Item) -> dict[str, Any]:
    return {"name": item.name, "execution": EXECUTIONS.bump(item.name)}


@probe_router.post("/v1/probe", operation_id="probeOpenAI_Probe")
async def probe_openai(item: Item, principal: CurrentPrincipal) -> dict[str, Any]:
    return {"name": item.name, "execution": EXECUTIONS.bump(item.name)}


@probe_router.post("/agents/probe", operation_id="probeRegistry_Probe")
async def probe_registry(item: Item, principal: CurrentPrincipal) -> dict[str, Any]:
    return {"name": item.name, "execution": EXECUTIONS.bump(item.name)}


def unique_name(prefix: str = "item") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def start_probe_gateway(data_dir: Path, database_url: str, env: dict[str, str] | None = None) -> Gateway:
    settings = build_settings(data_dir, database_url, write_config(data_dir, {}), env)
    app = create_app(settings)
    app.include_router(probe_router)
    server = ServerThread(app, name="probe-gateway").start()
    codec = TokenCodec(settings.jwt_secret.get_secret_value(), settings.jwt_audience)
    return Gateway(settings=settings, server=server, tokens=TokenFactory(codec))


ProbeFactory = Callable[..., Gateway]


@contextlib.contextmanager
def probe_gateway_factory(session_dir: Path, databases: DatabaseFactory) -> Iterator[ProbeFactory]:
    """Starts probe gateways on demand and stops them all when it ends."""
    started: list[Gateway] = []

    def factory(env: dict[str, str] | None = None, database_url: str | None = None) -> Gateway:
        data_dir = session_dir / f"probe-{uuid.uuid4().hex[:8]}"
        data_dir.mkdir()
        gateway = start_probe_gateway(data_dir, database_url or asyncio.run(databases.create()), env)
        started.append(gateway)
        return gateway

    try:
        yield factory
    finally:
        stop_gateways(started)


@pytest.fixture(scope="module")
def make_probe_gateway(session_dir: Path, databases: DatabaseFactory) -> Iterator[ProbeFactory]:
    """A test file's gateways with the probe router, stopped after its last test; `database_url=`
    shares one database between instances."""
    with probe_gateway_factory(session_dir, databases) as factory:
        yield factory


@pytest.fixture(scope="session")
def probe_gateway(session_dir: Path, databases: DatabaseFactory) -> Iterator[Gateway]:
    with probe_gateway_factory(session_dir, databases) as factory:
        yield factory()
