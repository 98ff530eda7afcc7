"""UpstreamClient fixtures: short timeouts, targets pointing at the fake provider's real socket."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import Timeouts, UpstreamTarget
from tests.fakes.provider import FakeProvider

KEY = "sk-upstream-test-" + "q7" * 12
# Generous: litellm's first call does lazy imports inside the first-byte window, and CI is shared.
TIMEOUTS = Timeouts(connect=5.0, first_byte=10.0, idle=5.0)
MESSAGES = [{"role": "user", "content": "Say hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]

MakeTarget = Callable[..., UpstreamTarget]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def pooled(client: UpstreamClient, allow_private: bool = True) -> tuple[list[object], int]:
    """The OpenAI-format pool's idle connections, and how many are in use."""
    pool = client.connections.pool(allow_private)
    return list(pool.idle_connections()), pool.busy


@pytest.fixture
async def upstream() -> AsyncIterator[UpstreamClient]:
    client = UpstreamClient(TIMEOUTS)
    yield client
    await client.aclose()


@pytest.fixture
def target(fake_provider: FakeProvider) -> MakeTarget:
    """A target for `provider` at the fake provider (base_url per kind as SPEC §5 defines it)."""

    def make(
        provider: str, model: str, *, allow_private: bool = True, base_url: str | None = None
    ) -> UpstreamTarget:
        if base_url is None:
            base_url = fake_provider.base_url + ("/v1" if provider == "openai" else "")
        return UpstreamTarget(provider, model, Secret(KEY), base_url, allow_private)

    return make
