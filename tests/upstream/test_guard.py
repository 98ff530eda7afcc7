"""The connect-time SSRF guard refuses forbidden addresses on every path and dials what it checked."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import pytest
from aiohappyeyeballs import AddrInfoType

from switchboard.errors import UpstreamForbidden
from switchboard.upstream import egress, guard, resolver
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.guard import ForbiddenAddress, GuardedBackend
from switchboard.upstream.resolver import ForbiddenHost
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
    with pytest.raises(UpstreamForbidden) as caught:
        await upstream.chat(target(provider, model, base_url=base, allow_private=False), BODY)
    assert "loopback" in caught.value.message
    assert fake_provider.received(model) == []


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_streams_are_guarded_too(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    base = f"http://localhost:{port_of(fake_provider)}" + ("/v1" if provider == "openai" else "")
    with pytest.raises(UpstreamForbidden):
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
    monkeypatch.setattr(egress, "forbidden_reason", lambda address: None)
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
    with pytest.raises(UpstreamForbidden):
        await upstream.embeddings(target("gemini", model, base_url=base, allow_private=False), {"input": "a"})
    assert fake_provider.received(model) == []


# --- the OpenAI-format pool: every address looked up is checked, and only those are dialed -----------


def answering(*addresses: str) -> Callable[[str, int], Awaitable[list[AddrInfoType]]]:
    """A lookup answering every name with fixed addresses, as a DNS server under an attacker's control."""

    async def lookup(host: str, port: int) -> list[AddrInfoType]:
        return [
            (
                socket.AF_INET6 if ":" in address else socket.AF_INET,
                socket.SOCK_STREAM,
                socket.IPPROTO_TCP,
                "",
                (address, port, 0, 0) if ":" in address else (address, port),
            )
            for address in addresses
        ]

    return lookup


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",  # decimal
        "0x7f000001",  # hex
        "127.1",  # short form
        "[::1]",
        "[::ffff:127.0.0.1]",  # IPv4-mapped
        "[::ffff:7f00:1]",  # IPv4-mapped, hex spelling
    ],
)
async def test_every_spelling_of_a_loopback_literal_is_refused_on_the_openai_pool(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, host: str
) -> None:
    model = unique("gpt")
    base = f"http://{host}:{port_of(fake_provider)}/v1"
    with pytest.raises(UpstreamForbidden) as caught:
        await upstream.chat(target("openai", model, base_url=base, allow_private=False), BODY)
    assert caught.value.status == 502 and caught.value.openai_code == "upstream_forbidden"
    assert fake_provider.received(model) == []


async def test_a_name_resolving_to_loopback_is_refused_on_the_openai_pool(
    monkeypatch: pytest.MonkeyPatch, upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    monkeypatch.setattr(resolver, "lookup", answering("127.0.0.1"))
    model = unique("gpt")
    base = f"http://provider.example:{port_of(fake_provider)}/v1"
    stream = upstream.chat_stream(target("openai", model, base_url=base, allow_private=False), BODY)
    with pytest.raises(UpstreamForbidden) as caught:
        await anext(stream)
    assert "loopback" in caught.value.message
    assert fake_provider.received(model) == []


async def test_the_pool_refuses_any_forbidden_answer_among_several(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolver, "lookup", answering("93.184.215.14", "10.0.0.7"))
    with pytest.raises(ForbiddenHost) as caught:
        await resolver.addresses("provider.example", 443, strict=True)
    assert caught.value.reason == "private address"


async def test_the_pool_dials_the_public_answers_it_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        resolver, "lookup", answering("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")
    )
    answers = await resolver.addresses("provider.example", 443, strict=True)
    assert [answer[4][0] for answer in answers] == ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]


async def test_private_answers_pass_when_private_upstreams_are_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(resolver, "lookup", answering("10.0.0.7"))
    assert [answer[4][0] for answer in await resolver.addresses("h", 80, strict=False)] == ["10.0.0.7"]


async def test_the_pool_dials_the_address_it_checked_and_keeps_the_name(
    monkeypatch: pytest.MonkeyPatch, upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    """`rebind.invalid` does not resolve for the operating system, so reaching the provider proves the
    socket went to the address the guard checked (here allowed by a permissive rule)."""
    monkeypatch.setattr(resolver, "lookup", answering("127.0.0.1"))
    monkeypatch.setattr(egress, "forbidden_reason", lambda address: None)
    model = unique("gpt")
    port = port_of(fake_provider)
    base = f"http://rebind.invalid:{port}/v1"
    await upstream.chat(target("openai", model, base_url=base, allow_private=False), BODY)
    [seen] = fake_provider.received(model)
    assert seen.headers["host"] == f"rebind.invalid:{port}"
