"""Limits fixtures: a gateway of their own (an agent and a budgeted economy in its config), and factories."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from switchboard.limits.models import LimitRow
from tests.conftest import GatewayFactory, default_test_config
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER, tls_context

AGENT_ID = "limited-agent"
CAPPED_BUDGET = "7000000000"
LIMITS_AGENT: dict[str, Any] = {
    "id": AGENT_ID,
    "version": "1",
    "display_name": "Limited",
    "role": "assistant",
    "goal": "Answer within limits",
    "system_prompt": "You answer briefly.",
    "model": {"kind": "tagged", "tag": "fast"},
}


def limits_config(provider_url: str) -> dict[str, Any]:
    config = default_test_config(provider_url)
    config["economies"] = [
        {"slug": "default", "name": "Default"},
        {"slug": "capped", "name": "Capped", "budget": CAPPED_BUDGET},
    ]
    config["agents"] = [LIMITS_AGENT]
    return config


@pytest.fixture(scope="session")
def limits_gateway(make_session_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    """Its own gateway: limits on `default` made here never reach another package's tests."""
    return make_session_gateway(config=limits_config(fake_provider.base_url))


@pytest.fixture()
def admin(limits_gateway: Gateway) -> User:
    return limits_gateway.user(role="Admin")


def new_economy(admin: User, **fields: Any) -> dict[str, Any]:
    body = {"slug": f"e-{uuid.uuid4().hex[:10]}", "name": "Team", **fields}
    response = admin.client.post("/economies", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def join_economy(admin: User, economy: str, user: User, role: str = "member") -> None:
    response = admin.client.post(
        f"/economies/{economy}/participants", json={"user_id": str(user.id), "role": role}
    )
    assert response.status_code in (200, 201), response.text


def new_room(owner: User) -> str:
    response = owner.client.post("/working-groups", json={"name": f"room-{uuid.uuid4().hex[:6]}"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def join_room(owner: User, room_id: str, user: User, role: str) -> None:
    response = owner.client.post(
        f"/working-groups/{room_id}/members", json={"user_id": str(user.id), "role": role}
    )
    assert response.status_code == 201, response.text


def issue_api_key(gateway: Gateway, user: User) -> str:
    """An API key's id; the key itself is kept out of the recorded responses."""
    with httpx.Client(base_url=gateway.url, timeout=30.0, verify=tls_context()) as client:
        response = client.post(
            "/auth/api-key/generate",
            json={"service_name": "limits-test", "description": ""},
            headers={"authorization": f"Bearer {user.token}"},
        )
    assert response.status_code == 201, response.text
    RECORDER.remember_secret(response.json()["api_key"])
    return str(response.json()["id"])


def limit_body(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"metric": "requests", "window": "day", "amount": "100"}
    body.update(fields)
    return body


def create_limit(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    response = client.post("/limits", json=limit_body(**fields))
    assert response.status_code == 201, response.text
    return dict(response.json())


def count_limits(gateway: Gateway) -> int:
    async def run() -> int:
        async with gateway.app.state.sessionmaker() as session:
            return int(await session.scalar(select(func.count()).select_from(LimitRow)) or 0)

    return int(gateway.server.call_soon(run()))
