"""Console fixtures: a gateway seeded through its API, and Chromium pages that watch what they do.

One gateway and one browser per module (both are slow to start); each test gets a fresh browser
context, so no sign-in or storage carries over between tests. Every page records the requests it
makes and its console errors and page errors; a test fails at teardown if a request left the
gateway's origin or an error was logged that the test did not expect.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.auth.conftest import Account, issue_key, make_account
from tests.conftest import GatewayFactory
from tests.llm.conftest import provider_base
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ECONOMY_SLUG = "research"
ECONOMY_NAME = "Research lab"
ROOM_NAME = "Research room"
AGENT_ID = "helper"


@dataclass
class World:
    """What the seed made: accounts, their API-side clients, and the ids the tests look for."""

    gateway: Gateway
    admin: Account
    alice: Account  # economy owner, room owner, credential holder
    bob: Account  # economy member, room member
    viewer: Account  # platform role Viewer, room viewer
    clients: dict[str, User]
    economy: dict[str, Any]
    room_id: str
    credentials: dict[str, dict[str, Any]]  # label -> credential as the API shows it
    secrets: list[str]
    alice_key: dict[str, Any]
    limit_ids: list[str]

    def client(self, name: str) -> Any:
        return self.clients[name].client


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def _chat(user: User, **headers: str) -> None:
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
    _ok(user.client.post("/v1/chat/completions", json=body, headers=headers))


def _agent(version: str, room_id: str) -> dict[str, Any]:
    return {
        "id": AGENT_ID,
        "version": version,
        "display_name": "Helper",
        "role": "assistant",
        "goal": "Answer questions",
        "source": "user",
        "system_prompt": "You help.",
        "working_group_id": room_id,
    }


def seed(gateway: Gateway, fake_provider: Any) -> World:
    accounts = {
        "admin": make_account(gateway, "Admin"),
        "alice": make_account(gateway, "User"),
        "bob": make_account(gateway, "User"),
        "viewer": make_account(gateway, "Viewer"),
    }
    users = {
        name: gateway.user(role=account.role, sub=account.id, email=account.email)
        for name, account in accounts.items()
    }
    admin, alice, bob, viewer = (users[name] for name in ("admin", "alice", "bob", "viewer"))
    economy = _ok(admin.client.post("/economies", json={"slug": ECONOMY_SLUG, "name": ECONOMY_NAME}), 201)
    for who, role in ((alice, "owner"), (bob, "member"), (viewer, "member")):
        body = {"user_id": str(who.id), "role": role}
        _ok(admin.client.post(f"/economies/{economy['id']}/participants", json=body), 201)
    room_id = _ok(alice.client.post("/working-groups", json={"name": ROOM_NAME}), 201)["id"]
    for who, role in ((bob, "member"), (viewer, "viewer")):
        body = {"user_id": str(who.id), "role": role}
        _ok(alice.client.post(f"/working-groups/{room_id}/members", json=body), 201)

    secrets: list[str] = []
    credentials: dict[str, dict[str, Any]] = {}
    # "spare" is for a provider no seeded call uses, so it stays unused.
    for label, provider, extra in (
        ("alice-openai", "openai", {}),
        ("room-openai", "openai", {"room_id": room_id}),
        ("spare", "anthropic", {}),
    ):
        secret = RECORDER.remember_secret(f"sk-console-{uuid.uuid4().hex}")
        secrets.append(secret)
        base_url = provider_base(fake_provider, provider)
        body = {"provider": provider, "secret": secret, "base_url": base_url, "label": label, **extra}
        credentials[label] = _ok(alice.client.post("/llm-credentials", json=body), 201)

    # Usage in the research economy: alice on her own key (chat twice, embeddings once), bob on the
    # room's key.
    in_research = {"X-Economy-Id": economy["id"]}
    _chat(alice, **in_research)
    _chat(alice, **in_research)
    embed = {"model": "openai/text-embedding-3-small", "input": "hello"}
    _ok(alice.client.post("/v1/embeddings", json=embed, headers=in_research))
    _chat(bob, **in_research, **{"X-Working-Group-Id": room_id})

    limits = [
        {"subject_type": "economy", "subject_id": ECONOMY_SLUG, "metric": "cost", "window": "month"},
        {"subject_type": "user", "subject_id": str(alice.id), "metric": "requests", "window": "day"},
    ]
    amount = {"amount": "5000000000"}
    limit_ids = [_ok(admin.client.post("/limits", json={**limit, **amount}), 201)["id"] for limit in limits]
    for version in ("1", "2"):
        _ok(alice.client.post("/agents", json=_agent(version, room_id)), 201)
    alice_key = issue_key(gateway, alice.token, service_name="ci-bot")
    # last_used_at is written in the background each second; write it now rather than wait.
    gateway.server.call_soon(gateway.app.state.credentials.flush())
    credentials = {c["label"]: c for c in _ok(alice.client.get("/llm-credentials"))["data"]}
    return World(
        gateway=gateway,
        admin=accounts["admin"],
        alice=accounts["alice"],
        bob=accounts["bob"],
        viewer=accounts["viewer"],
        clients=users,
        economy=economy,
        room_id=room_id,
        credentials=credentials,
        secrets=secrets,
        alice_key=alice_key,
        limit_ids=limit_ids,
    )


@pytest.fixture(scope="module")
def world(make_gateway: GatewayFactory, fake_provider: Any) -> World:
    return seed(make_gateway(), fake_provider)


@pytest.fixture(scope="module")
def browser(world: World) -> Iterator[Any]:
    # After the world: sync Playwright runs its own event loop in this thread while it is started,
    # and the gateway fixtures use asyncio.run.
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()
    finally:
        playwright.stop()


@dataclass
class Watched:
    """A page, with every request it made and every error it logged."""

    page: Any
    origin: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    expected_failures: list[str] = field(default_factory=list)  # paths whose 4xx the test provokes

    def expect_failure(self, path: str) -> None:
        self.expected_failures.append(self.origin + path)

    def foreign_requests(self) -> list[str]:
        # A download's object URL is same-origin too: blob:<origin>/<uuid>.
        return [
            url
            for url in self.requests
            if not (url.startswith(self.origin + "/") or url.startswith(f"blob:{self.origin}/"))
        ]


@pytest.fixture
def watched(browser: Any, world: World) -> Iterator[Watched]:
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    seen = Watched(page=page, origin=world.gateway.url)

    def on_console(message: Any) -> None:
        if message.type != "error":
            return
        where = message.location.get("url", "")
        # Chromium logs an HTTP error answer to fetch() as a console error; some the test provokes.
        if message.text.startswith("Failed to load resource") and where in seen.expected_failures:
            return
        seen.errors.append(f"console: {message.text} at {where}")

    page.on("request", lambda request: seen.requests.append(request.url))
    page.on("console", on_console)
    page.on("pageerror", lambda error: seen.errors.append(f"pageerror: {error}"))
    yield seen
    context.close()
    assert seen.foreign_requests() == []
    assert seen.errors == []
    assert any(url.startswith(seen.origin + "/console") for url in seen.requests)
