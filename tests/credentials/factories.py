"""Factories for credentials: every plain secret is registered with the session-wide leak check."""

from __future__ import annotations

import uuid
from typing import Any

from tests.support.gateway import User
from tests.support.recorder import RECORDER


def fresh_secret(prefix: str = "sk-test-") -> str:
    return RECORDER.remember_secret(prefix + uuid.uuid4().hex + uuid.uuid4().hex[:8])


def new_credential(
    user: User, provider: str = "openai", *, secret: str | None = None, **fields: Any
) -> tuple[dict[str, Any], str]:
    """Creates a credential through the API; returns the response body and the plain secret."""
    secret = RECORDER.remember_secret(secret) if secret is not None else fresh_secret()
    response = user.client.post("/llm-credentials", json={"provider": provider, "secret": secret, **fields})
    assert response.status_code == 201, response.text
    return response.json(), secret


def listed_ids(user: User, **params: Any) -> list[str]:
    response = user.client.get("/llm-credentials", params=params)
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]
