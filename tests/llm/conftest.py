"""Callers with provider credentials pointing at the fake provider, and SDK clients for them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest

from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER
from tests.support.sdks import openai_client


@dataclass
class Caller:
    user: User
    keys: dict[str, str]  # provider -> plain key the fake provider will see
    credential_ids: dict[str, str]
    sdk: openai.OpenAI


def unique_model(prefix: str = "m") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def add_credential(user: User, provider: str, base_url: str, **extra: Any) -> tuple[str, str]:
    secret = RECORDER.remember_secret(f"sk-{provider}-{uuid.uuid4().hex}")
    response = user.client.post(
        "/llm-credentials", json={"provider": provider, "secret": secret, "base_url": base_url, **extra}
    )
    assert response.status_code == 201, response.text
    return secret, response.json()["id"]


def provider_base(fake_provider: Any, provider: str) -> str:
    # SPEC §5: an openai-kind base_url includes /v1; anthropic and gemini take the host root.
    return f"{fake_provider.base_url}/v1" if provider == "openai" else fake_provider.base_url


def credentialed_user(gateway: Gateway, fake_provider: Any, providers: tuple[str, ...]) -> User:
    """A new user with a credential of each provider kind, pointing at the fake provider."""
    user = gateway.user()
    for provider in providers:
        add_credential(user, provider, provider_base(fake_provider, provider))
    return user


def records_of_model(user: User, model: str, count: int = 1) -> list[dict[str, Any]]:
    """The user's usage records of `model` (tests give each a model of its own: unique_model), once
    there are at least `count` of them or 10 s have passed. A stream's record is written as the
    gateway's side unwinds, which can be after its client has read the last event and moved on."""
    deadline = time.monotonic() + 10
    while True:
        data: list[dict[str, Any]] = user.client.get("/usage/me", params={"limit": 500}).json()["data"]
        found = [r for r in data if r["model"] == model]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def make_caller(
    gateway: Gateway,
    fake_provider: Any,
    providers: tuple[str, ...] = ("openai", "anthropic", "gemini"),
    role: str = "User",
) -> Caller:
    user = gateway.user(role=role)
    keys: dict[str, str] = {}
    ids: dict[str, str] = {}
    for provider in providers:
        keys[provider], ids[provider] = add_credential(user, provider, provider_base(fake_provider, provider))
    sdk = openai_client(gateway, user)
    return Caller(user=user, keys=keys, credential_ids=ids, sdk=sdk)


@pytest.fixture
def caller(gateway: Gateway, fake_provider: Any) -> Iterator[Caller]:
    made = make_caller(gateway, fake_provider)
    yield made
    made.sdk.close()
