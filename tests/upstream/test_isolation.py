"""Calls to the native kinds (openai, anthropic, gemini) never import litellm; litellm's calls (the
long tail, Gemini embeddings) reach no host but the provider."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from fastapi import FastAPI

from switchboard.settings import Settings
from switchboard.upstream import lifecycle
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.prices import litellm_price_table
from tests.fakes.provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]

OPENAI_ONLY = """
import asyncio, sys
import switchboard.upstream.client, switchboard.upstream.lifecycle, switchboard.upstream.prices
import switchboard.upstream.translated, switchboard.upstream.provider_errors
from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.prices import litellm_price_table
from switchboard.upstream.types import Timeouts, UpstreamTarget

async def main():
    client = UpstreamClient(Timeouts(5, 5, 5))
    target = UpstreamTarget("openai", "gpt-4o-mini", Secret("sk-test"), sys.argv[1] + "/v1", True)
    body = {"messages": [{"role": "user", "content": "hi"}]}
    assert (await client.chat(target, body)).usage.prompt_tokens == 11
    assert [e async for e in client.chat_stream(target, body)]
    await client.embeddings(target, {"input": "a"})
    assert litellm_price_table("openai", "gpt-4o-mini") is not None
    for kind in ("anthropic", "gemini"):  # the gateway's own adapters
        native = UpstreamTarget(kind, "m", Secret("k"), sys.argv[1], True)
        assert (await client.chat(native, {**body, "max_tokens": 5})).usage.prompt_tokens == 11
        assert [e async for e in client.chat_stream(native, {**body, "max_tokens": 5})]
    await client.aclose()

asyncio.run(main())
loaded = sorted(name for name in sys.modules if name == "litellm" or name.startswith("litellm."))
print("LOADED", loaded)
"""

OFFLINE = """
import asyncio, socket, sys
outside = []
LOCAL = ("127.0.0.1", "::1", "localhost")
real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

def connect(self, address):
    if isinstance(address, tuple) and address[0] not in LOCAL:
        outside.append(address)
        raise OSError("network blocked by the test")
    return real_connect(self, address)

def getaddrinfo(host, *args, **kwargs):
    if host not in LOCAL:
        outside.append(host)
        raise socket.gaierror("network blocked by the test")
    return real_getaddrinfo(host, *args, **kwargs)

socket.socket.connect, socket.getaddrinfo = connect, getaddrinfo
from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import Timeouts, UpstreamTarget

async def main():
    client = UpstreamClient(Timeouts(5, 10, 5))
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    target = UpstreamTarget("mistral", "m", Secret("k"), sys.argv[1] + "/v1", True)  # through litellm
    await client.chat(target, body)
    assert [e async for e in client.chat_stream(target, body)]
    await client.embeddings(UpstreamTarget("gemini", "e", Secret("k"), sys.argv[1], True), {"input": "a"})
    await client.aclose()

asyncio.run(main())
print("OUTSIDE", outside, "litellm" in sys.modules)
"""


def run(code: str, fake_provider: FakeProvider) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, fake_provider.base_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_native_kind_calls_never_import_litellm(fake_provider: FakeProvider) -> None:
    assert "LOADED []" in run(OPENAI_ONLY, fake_provider)


def test_litellm_is_imported_and_used_without_any_network_call_but_the_providers(
    fake_provider: FakeProvider,
) -> None:
    assert "OUTSIDE [] True" in run(OFFLINE, fake_provider)


def _input_output(provider: str, model: str) -> tuple[Decimal, Decimal] | None:
    table = litellm_price_table(provider, model)
    if table is None:
        return None
    return table[0]["input_per_mtok"] or Decimal(0), table[0]["output_per_mtok"] or Decimal(0)


def test_prices_come_from_litellm_cost_map_per_million_tokens() -> None:
    assert _input_output("openai", "gpt-4o-mini") == (Decimal("0.15"), Decimal("0.6"))
    assert _input_output("openai", "text-embedding-3-small") == (Decimal("0.02"), Decimal(0))
    assert _input_output("gemini", "gemini-2.5-flash") is not None
    assert _input_output("anthropic", "gpt-4o-mini") is None  # another provider's model
    assert _input_output("openai", "no-such-model") is None


async def test_lifecycle_attaches_one_client_and_closes_it() -> None:
    app = FastAPI()
    app.state.settings = Settings(
        upstream_connect_timeout=3, upstream_first_byte_timeout=7, upstream_idle_timeout=4
    )
    await lifecycle.startup(app)
    client = app.state.upstream
    assert isinstance(client, UpstreamClient)
    assert (client.pool.timeouts.connect, client.pool.timeouts.first_byte, client.pool.timeouts.idle) == (
        3,
        7,
        4,
    )
    pool = client.connections.pool(False)  # built at startup: the OpenAI-format pool
    http = client.pool.client(False)  # built on first use: litellm's httpx pool
    await lifecycle.shutdown(app)
    assert pool.closed and http.is_closed


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_prices_for_unknown_provider_models_are_none(provider: str) -> None:
    assert _input_output(provider, "definitely-not-a-model") is None
