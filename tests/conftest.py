"""Suite-wide fixtures: databases, the fake provider, gateways on real ports, tokens."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.support import cpu_report
from tests.support.databases import DatabaseFactory
from tests.support.gateway import (
    RUNNING,
    Gateway,
    User,
    build_settings,
    start_gateway,
    stop_gateways,
    write_config,
)
from tests.support.recorder import RECORDER
from tests.support.scheduling import longest_groups_first, mark_groups_in_node_ids
from tests.support.sdks import anthropic_client, openai_client
from tests.support.servers import ServerThread


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("switchboard")


@pytest.fixture(scope="session")
def databases(session_dir: Path) -> Iterator[DatabaseFactory]:
    factory = DatabaseFactory(session_dir)
    yield factory
    asyncio.run(factory.cleanup())


@pytest.fixture(scope="session")
def fake_provider() -> Iterator[Any]:
    from tests.fakes.provider import FakeProvider

    provider = FakeProvider()
    server = ServerThread(provider.app, name="fake-provider").start()
    provider.base_url = server.url
    yield provider
    server.stop()


def default_test_config(provider_url: str) -> dict[str, Any]:
    return {
        "default_economy": "default",
        "economies": [{"slug": "default", "name": "Default", "currency": "USD"}],
        "models": [
            {
                "provider": "openai",
                "model": "gpt-4o-mini",
                "tags": ["fast", "cheap"],
                "input_per_mtok": "0.15",
                "output_per_mtok": "0.60",
            },
            {
                "provider": "openai",
                "model": "text-embedding-3-small",
                "tags": ["embed"],
                "kind": "embedding",
                "input_per_mtok": "0.02",
                "output_per_mtok": "0",
            },
            {
                "provider": "anthropic",
                "model": "claude-3-5-haiku-latest",
                "tags": ["fast"],
                "input_per_mtok": "0.80",
                "output_per_mtok": "4.00",
            },
            {
                "provider": "gemini",
                "model": "gemini-2.0-flash",
                "tags": ["google"],
                "input_per_mtok": "0.10",
                "output_per_mtok": "0.40",
            },
        ],
        "aliases": {"fast": "openai/gpt-4o-mini", "claude": "anthropic/claude-3-5-haiku-latest"},
        "default": ["openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"],
        "deployment_credentials": [],
        "tools": ["web_search", "code_interpreter"],
    }


GatewayFactory = Callable[..., Gateway]


@contextlib.contextmanager
def gateway_factory(
    session_dir: Path, databases: DatabaseFactory, fake_provider: Any
) -> Iterator[GatewayFactory]:
    """Starts gateways on demand and stops them all when it ends."""
    started: list[Gateway] = []

    def factory(
        config: dict[str, Any] | str | None = None,
        env: dict[str, str] | None = None,
        database_url: str | None = None,
        fast_model_calls: bool = True,
    ) -> Gateway:
        data_dir = session_dir / f"gw-{uuid.uuid4().hex[:8]}"
        data_dir.mkdir()
        db_url = database_url or asyncio.run(databases.create(migrated=True))
        config_path = write_config(
            data_dir, config if config is not None else default_test_config(fake_provider.base_url)
        )
        settings = build_settings(data_dir, db_url, config_path, env)
        gateway = start_gateway(settings, fast_model_calls=fast_model_calls)
        started.append(gateway)
        return gateway

    try:
        yield factory
    finally:
        stop_gateways(started)


@pytest.fixture(scope="session")
def make_session_gateway(
    session_dir: Path, databases: DatabaseFactory, fake_provider: Any
) -> Iterator[GatewayFactory]:
    """For the few gateways the tests of several files share (`gateway`, a package's own)."""
    with gateway_factory(session_dir, databases, fake_provider) as factory:
        yield factory


@pytest.fixture(scope="module")
def make_gateway(
    session_dir: Path, databases: DatabaseFactory, fake_provider: Any
) -> Iterator[GatewayFactory]:
    """A test file's own gateways, stopped when its last test has run: an idle gateway still runs its
    background loops in the worker's process and holds its sockets and database files open, and a
    worker runs hundreds of files."""
    with gateway_factory(session_dir, databases, fake_provider) as factory:
        yield factory


@pytest.fixture(scope="module", autouse=True)
def close_shared_gateway_clients() -> Iterator[None]:
    """After a test file, the clients its users made to gateways that outlive it (`gateway`, a
    package's own): a client keeps its socket open, and the shared gateways serve hundreds of files'
    users. Set up before, so torn down after, the file's own fixtures; no session fixture makes users."""
    yield
    for gateway in RUNNING:
        gateway.close_clients()


@pytest.fixture(scope="session")
def gateway(make_session_gateway: GatewayFactory) -> Gateway:
    """The shared gateway: tests isolate themselves by using fresh users and rooms."""
    return make_session_gateway()


@pytest.fixture
def openai_sdk(gateway: Gateway, user: User) -> Iterator[openai.OpenAI]:
    """The openai SDK as `user` of the test's `gateway` (each module's own `user` fixture)."""
    with openai_client(gateway, user) as client:
        yield client


@pytest.fixture
def anthropic_sdk(gateway: Gateway, user: User) -> Iterator[anthropic.Anthropic]:
    """The anthropic SDK as `user` of the test's `gateway` (each module's own `user` fixture)."""
    with anthropic_client(gateway, user) as client:
        yield client


def pytest_configure(config: pytest.Config) -> None:
    cpu_report.register(config)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaks = RECORDER.leaks()
    if leaks:
        session.exitstatus = 1
        print(f"\nSECRET LEAK: {len(leaks)} registered secret(s) appeared in responses: {leaks}")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order and groups `--dist loadgroup` spreads over workers (tests/support/scheduling.py);
    before xdist adds each test's group to its id, hence tryfirst."""
    longest_groups_first(items)
    mark_groups_in_node_ids(config, items)
