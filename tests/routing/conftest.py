"""A gateway whose catalog routes (fallbacks, a model with its own routing), and callers whose
provider keys tell the fake provider how to fail (tests/fakes/key_behaviour.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.conftest import GatewayFactory, default_test_config
from tests.llm.conftest import provider_base
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER
from tests.support.sdks import openai_client

# A model that gives up on a silent provider quickly and never retries it.
QUICK = "gpt-quick"
QUICK_TIMEOUT_S = 0.5


def routing_config(provider_url: str) -> dict[str, Any]:
    config = default_test_config(provider_url)
    config["models"].append(
        {
            "provider": "openai",
            "model": QUICK,
            "routing": {"first_byte_timeout_s": QUICK_TIMEOUT_S, "retries": 0},
        }
    )
    config["routing"] = {"retries": 1, "cooldown_s": 30, "first_byte_timeout_s": 30}
    config["fallbacks"] = {
        "openai/gpt-4o-mini": ["anthropic/claude-3-5-haiku-latest"],
        "claude": ["tag:google"],  # an alias's fallbacks apply when the caller names the alias
    }
    return config


@pytest.fixture(scope="session")
def routing_gateway(make_session_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    """Shared by the routing tests; each isolates itself with fresh users, keys and models."""
    return make_session_gateway(config=routing_config(fake_provider.base_url))


def key(behaviour: str = "ok") -> str:
    """A provider key the fake provider treats as `behaviour` (`ok`: answers as scripted)."""
    prefix = "sk-plain" if behaviour == "ok" else f"sk-fake-{behaviour}"
    return RECORDER.remember_secret(f"{prefix}-{uuid.uuid4().hex}")


@dataclass
class Caller:
    user: User
    sdk: openai.OpenAI
    fake_provider: Any
    credential_keys: dict[str, str] = field(default_factory=dict)  # credential id → its key

    def add_key(
        self, provider: str, secret: str, *, room_id: str | None = None, base_url: str | None = None
    ) -> str:
        body: dict[str, Any] = {
            "provider": provider,
            "secret": secret,
            "base_url": base_url or provider_base(self.fake_provider, provider),
        }
        if room_id is not None:
            body.update(scope="room", room_id=room_id)
        response = self.user.client.post("/llm-credentials", json=body)
        assert response.status_code == 201, response.text
        credential_id: str = response.json()["id"]
        self.credential_keys[credential_id] = secret
        return credential_id

    def chat(self, model: str = "openai/gpt-4o-mini", **kwargs: Any) -> Any:
        """The SDK's raw response (headers and parsed body); raises the SDK's error classes."""
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
        return self.sdk.chat.completions.with_raw_response.create(model=model, messages=messages, **kwargs)

    def post(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        body = {"messages": [{"role": "user", "content": "hi"}], **body}
        return self.user.client.post("/v1/chat/completions", json=body, headers=headers)

    def records(self, request_id: str) -> list[dict[str, Any]]:
        """The call's usage records, by attempt."""
        response = self.user.client.get("/usage/me", params={"limit": 500})
        assert response.status_code == 200, response.text
        found = [r for r in response.json()["data"] if r["request_id"] == request_id]
        return sorted(found, key=lambda record: record["attempt"])

    def tried(self, secret: str) -> int:
        """How many requests the fake provider received with this key."""
        return sum(1 for received in self.fake_provider.received() if received.api_key == secret)


@pytest.fixture
def caller(routing_gateway: Gateway, fake_provider: Any) -> Iterator[Caller]:
    user = routing_gateway.user()
    sdk = openai_client(routing_gateway, user)
    yield Caller(user=user, sdk=sdk, fake_provider=fake_provider)
    sdk.close()
