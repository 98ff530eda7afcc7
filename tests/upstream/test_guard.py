"""The connect-time SSRF guard refuses forbidden addresses on every path and dials what it checked."""

from __future__ import annotations

import pytest

from switchboard.errors import Unprocessable
from switchboard.upstream import guard
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.guard import ForbiddenAddress, GuardedBackend
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import MESSAGES, MakeTarget, unique

BODY = {"messages": MESSAGES, "max_tokens": 5}


def port_of(fake_provider: FakeProvider) -> int:
    return int(fake_provider.base_url.rsplit(":", 1)[1])


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::ffff:127.0.0.1]"])
async def test_a_host_resolving_to_loopback_is_refused_when_private_upstreams_are_not_allowed(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str, host: str
) -> None:
    model = unique(provider)
    base = f"http://{host}:{port_of(fake_provider)}" + ("/v1" if provider == "openai" else "")
    with pytest.raises(Unprocessable) as caught:
        await upstream.chat(target(provider, model, base_url=base, allow_private=False), BODY)
    assert "loopback" in caught.value.message
    assert fake_provider.received(model) == []


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_streams_are_guarded_too(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    base = f"http://localhost:{port_of(fake_provider)}" + ("/v1" if provider == "openai" else "")
    with pytest.raises(Unprocessable):
        await anext(upstream.chat_stream(target(provider, model, base_url=base, allow_private=False), BODY))
    assert fake_provider.received(model) == []


async def test_the_same_host_is_reached_when_private_upstreams_are_allowed(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gpt")
    base = f"http://localhost:{port_of(fake_provider)}/v1"
    await upstream.chat(target("openai", model, base_url=base, allow_private=True), BODY)
    assert len(fake_provider.received(model)) == 1


async def test_the_backend_refuses_any_forbidden_answer_among_several(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def mixed(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "10.0.0.7"]  # a rebinding answer: one public, one private

    monkeypatch.setattr(guard, "resolve_host", mixed)
    with pytest.raises(ForbiddenAddress) as caught:
        await GuardedBackend(strict=True, connect_timeout=1).connect_tcp("provider.example", 443)
    assert caught.value.reason == "private address"


async def test_the_backend_dials_the_address_it_checked_not_the_name(
    monkeypatch: pytest.MonkeyPatch, fake_provider: FakeProvider
) -> None:
    """`rebind.invalid` does not resolve for the operating system, so reaching the provider proves the
    socket went to the address the guard resolved and checked (here allowed by a permissive rule)."""

    async def resolved(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    monkeypatch.setattr(guard, "resolve_host", resolved)
    monkeypatch.setattr(guard, "forbidden_reason", lambda address: None)
    stream = await GuardedBackend(strict=True, connect_timeout=1).connect_tcp(
        "rebind.invalid", port_of(fake_provider)
    )
    await stream.write(b"GET /v1/models HTTP/1.1\r\nHost: rebind.invalid\r\nConnection: close\r\n\r\n")
    assert (await stream.read(4096)).startswith(b"HTTP/1.1 200")
    await stream.aclose()


async def test_gemini_embeddings_through_litellm_are_guarded(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("gemini-embed")
    base = f"http://localhost:{port_of(fake_provider)}"
    with pytest.raises(Unprocessable):
        await upstream.embeddings(target("gemini", model, base_url=base, allow_private=False), {"input": "a"})
    assert fake_provider.received(model) == []
