"""A provider whose litellm default endpoint is the gateway's own host needs a public base_url (SPEC §21)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from switchboard.errors import SwitchboardError, UpstreamForbidden
from switchboard.kit.netaddr import forbidden_reason
from switchboard.kit.secret import Secret
from switchboard.settings import SettingsError
from switchboard.upstream import guard, guard_sync, private_defaults, providers
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import UpstreamTarget
from tests.conftest import default_test_config
from tests.credentials.factories import fresh_secret, listed_ids
from tests.fakes.provider import FakeProvider
from tests.support.gateway import Gateway, build_settings, write_config
from tests.upstream.conftest import KEY, MESSAGES

BODY = {"messages": MESSAGES, "max_tokens": 5}
# litellm 1.106.0's default endpoints for the kinds that have one on the gateway's host.
DEFAULT_PORTS = {
    "ollama": 11434,
    "ollama_chat": 11434,
    "lemonade": 8000,
    "llamafile": 8080,
    "docker_model_runner": 22088,
    "langflow": 7860,
    "langgraph": 2024,
    "xinference": 9997,
}

_connects: list[tuple[str, int]] | None = None
_watched = 0  # the thread whose sockets are recorded: the test's (and its event loop's)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Every socket the test's thread opens, whoever opens it (litellm's own clients included); the
    # session's gateways run in threads of their own, with their database connections.
    if (
        event == "socket.connect"
        and _connects is not None
        and isinstance(args[1], tuple)
        and threading.get_ident() == _watched
    ):
        _connects.append((str(args[1][0]), int(args[1][1])))


sys.addaudithook(_audit)


@contextlib.contextmanager
def sockets_opened() -> Iterator[list[tuple[str, int]]]:
    global _connects, _watched
    _watched = threading.get_ident()
    _connects = seen = []
    try:
        yield seen
    finally:
        _connects = None


class Listeners:
    """A listener on each default port that is free here; counts the connections each accepts."""

    def __init__(self, ports: set[int]) -> None:
        self.sockets: list[socket.socket] = []
        for port in sorted(ports):
            for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((address, port))
                except OSError:  # busy on this shared machine: the audit hook still sees any connect
                    sock.close()
                    continue
                sock.listen(16)
                sock.setblocking(False)
                self.sockets.append(sock)

    def accepted(self) -> int:
        count = 0
        for sock in self.sockets:
            with contextlib.suppress(BlockingIOError):
                while True:
                    conn, _ = sock.accept()
                    conn.close()
                    count += 1
        return count

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


@pytest.fixture
def listeners() -> Iterator[Listeners]:
    opened = Listeners(set(DEFAULT_PORTS.values()))
    yield opened
    opened.close()


def _private(address: tuple[str, int]) -> bool:
    return forbidden_reason(address[0]) is not None


def test_every_kind_with_a_private_default_has_a_listened_port() -> None:
    assert set(DEFAULT_PORTS) <= private_defaults.PRIVATE_DEFAULT <= set(providers.LONG_TAIL)


@pytest.mark.parametrize("kind", sorted(private_defaults.PRIVATE_DEFAULT))
def test_a_credential_without_base_url_for_a_private_default_kind_is_a_422_on_create_and_patch(
    strict_gateway: Gateway, kind: str
) -> None:
    user = strict_gateway.user()
    created = user.client.post("/llm-credentials", json={"provider": kind, "secret": fresh_secret()})
    assert created.status_code == 422, created.text
    assert created.json()["code"] == "VALIDATION_FAILED" and "base_url" in created.json()["error"]
    assert listed_ids(user) == []
    good = {"provider": kind, "secret": fresh_secret(), "base_url": "https://93.184.216.34/v1"}
    stored = user.client.post("/llm-credentials", json=good)
    assert stored.status_code == 201, stored.text
    cleared = user.client.patch(f"/llm-credentials/{stored.json()['id']}", json={"base_url": None})
    assert cleared.status_code == 422, cleared.text
    assert user.client.get(f"/llm-credentials/{stored.json()['id']}").json()["base_url"] == good["base_url"]


def test_such_a_credential_is_stored_when_private_upstreams_are_allowed(gateway: Gateway) -> None:
    created = gateway.user().client.post("/llm-credentials", json={"provider": "ollama", "secret": "x"})
    assert created.status_code == 201, created.text


def test_a_deployment_credential_without_base_url_for_such_a_kind_stops_the_start(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    config = default_test_config(fake_provider.base_url)
    config["deployment_credentials"] = [{"provider": "lemonade", "api_key_env": "SOME_KEY"}]
    path = write_config(tmp_path, config)
    with pytest.raises(SettingsError, match="lemonade credentials need a public base_url"):
        build_settings(
            tmp_path, "sqlite+aiosqlite:///:memory:", path, {"SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "false"}
        )
    allowed = build_settings(
        tmp_path, "sqlite+aiosqlite:///:memory:", path, {"SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "true"}
    )
    assert allowed.config.deployment_credentials[0].provider == "lemonade"


@pytest.mark.parametrize("kind", sorted(private_defaults.PRIVATE_DEFAULT))
@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_never_reaches_a_private_default(
    upstream: UpstreamClient, listeners: Listeners, kind: str, stream: bool
) -> None:
    target = UpstreamTarget(kind, f"model-{uuid.uuid4().hex[:6]}", Secret(KEY), None, allow_private=False)
    with sockets_opened() as opened, pytest.raises(UpstreamForbidden) as caught:
        if stream:
            await anext(upstream.chat_stream(target, {**BODY, "stream": True}))
        else:
            await upstream.chat(target, BODY)
    assert caught.value.status == 502 and caught.value.openai_code == "upstream_forbidden"
    assert listeners.accepted() == 0
    assert [address for address in opened if _private(address)] == []


async def test_no_other_kind_of_the_pinned_litellm_defaults_to_a_private_address(
    upstream: UpstreamClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Derives the list from litellm itself: every long-tail kind is called without a base_url; the
    guard records the host litellm asks for (and refuses it: no call leaves), and the audit hook
    any socket litellm opens on its own."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]  # refused by the guard: nothing is dialled

    def resolve_sync(host: str, port: int, timeout: float) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    monkeypatch.setattr(guard, "resolve_host", resolve)
    monkeypatch.setattr(guard_sync, "_addresses", resolve_sync)
    skipped = providers.BORROWS_HOST_IDENTITY | private_defaults.PRIVATE_DEFAULT
    found: dict[str, list[object]] = {}
    for kind in providers.LONG_TAIL:
        if kind in skipped:
            continue
        secret = Secret(KEY)
        if (shape := providers.SECRET_SHAPES.get(kind)) is not None:
            secret = Secret(orjson.dumps(dict.fromkeys(shape.required, "v1")).decode())
        asked.clear()
        with sockets_opened() as opened, contextlib.suppress(SwitchboardError):
            await upstream.chat(UpstreamTarget(kind, "some-model", secret, None), BODY)
        private = [host for host in asked if _names_inside(host)] + [a for a in opened if _private(a)]
        if private:
            found[kind] = private
    assert found == {}


def _names_inside(host: str) -> bool:
    name = host.strip("[]").rstrip(".").lower()
    return (
        name == "localhost"
        or name.endswith(".localhost")
        or forbidden_reason(name) not in (None, "not an IP address")
    )


def test_providers_lists_their_base_url_as_required_where_the_guard_is_on(
    strict_gateway: Gateway, gateway: Gateway
) -> None:
    def listed(on: Gateway) -> dict[str, str]:
        data = on.user().client.get("/providers", params={"limit": 500}).json()["data"]
        return {entry["kind"]: entry["base_url"] for entry in data}

    strict, lenient = listed(strict_gateway), listed(gateway)
    assert {strict[kind] for kind in private_defaults.PRIVATE_DEFAULT} == {"required"}
    assert lenient["ollama"] == "optional"
