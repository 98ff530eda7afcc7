"""Embedded-auth fixtures: password accounts built as rows, and sign-ins kept out of the leak recorder.

The leak check (tests/support/recorder.py) fails the run if a registered secret appears in any
recorded response. A sign-in answer (a login result, the one-time key issue) must contain its secret,
so those calls go through a plain, unrecorded client; the secrets they return are registered right
after. Every later response (listings, claims, errors, replays) is recorded and must never echo them.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from switchboard.auth.users import create_user
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER, tls_context


@dataclass
class Account:
    id: uuid.UUID
    email: str
    password: str
    role: str


def make_account(gateway: Gateway, role: str = "User") -> Account:
    email = f"user-{uuid.uuid4().hex[:12]}@example.test"
    password = RECORDER.remember_secret("pw-" + secrets.token_urlsafe(18))
    app = gateway.app

    async def insert() -> uuid.UUID:
        async with app.state.sessionmaker() as session, session.begin():
            user = await create_user(
                session, app.state.auth.passwords, email=email, role=role, password=password
            )
            return user.id

    return Account(gateway.server.call_soon(insert()), email, password, role)


def unrecorded_post(
    gateway: Gateway, path: str, body: dict[str, Any], token: str | None = None
) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=gateway.url, timeout=30.0, verify=tls_context()) as client:
        return client.post(path, json=body, headers=headers)


def sign_in(gateway: Gateway, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A successful sign-in (login, refresh, key exchange); its tokens are registered as secrets."""
    response = unrecorded_post(gateway, path, body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    RECORDER.remember_secret(result["token"])
    RECORDER.remember_secret(result["refresh_token"])
    return result


def login(gateway: Gateway, account: Account) -> dict[str, Any]:
    return sign_in(gateway, "/auth/login", {"email": account.email, "password": account.password})


def issue_key(gateway: Gateway, token: str, service_name: str = "billing-sync") -> dict[str, Any]:
    """Generate an API key; the issue answer is its only legitimate appearance."""
    response = unrecorded_post(
        gateway, "/auth/api-key/generate", {"service_name": service_name, "description": "test"}, token
    )
    assert response.status_code == 201, response.text
    issued: dict[str, Any] = response.json()
    RECORDER.remember_secret(issued["api_key"])
    return issued


def new_room(gateway: Gateway, owner: User) -> str:
    response = owner.client.post("/working-groups", json={"name": f"room-{uuid.uuid4().hex[:6]}"})
    assert response.status_code == 201, response.text
    room_id: str = response.json()["id"]
    return room_id


def join(owner: User, room_id: str, member: User, role: str) -> None:
    body = {"user_id": str(member.id), "role": role}
    response = owner.client.post(f"/working-groups/{room_id}/members", json=body)
    assert response.status_code == 201, response.text


def delegate(user: User, room_id: str, scope: list[str], expiry: int = 600) -> Any:
    return user.client.post(
        "/auth/delegation/jwt",
        json={"group_id": room_id, "delegation_scope": scope, "expiry_seconds": expiry},
    )


@pytest.fixture
def account(gateway: Gateway) -> Account:
    return make_account(gateway)
