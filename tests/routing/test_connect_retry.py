"""A connect that failed wrote nothing (SPEC §21): the gateway connects again on a fresh connection,
and the caller sees one attempt, one usage record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GatewayFactory
from tests.routing.conftest import Caller, key, routing_config
from tests.support.gateway import Gateway
from tests.support.sdks import openai_client
from tests.upstream.raw_server import ThreadedRawProvider, answer, certificates

COMPLETION = (
    b'{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}'
)


@pytest.fixture(scope="module")
def tls_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ThreadedRawProvider, Path]]:
    """A TLS provider whose first connection is reset before the handshake; every later one is
    answered with a completion."""
    certs = certificates(tmp_path_factory.mktemp("certs"))
    ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
    provider = ThreadedRawProvider(lambda head, body: answer(ok, COMPLETION), tls=certs.server, resets=1)
    with provider.running():
        yield provider, certs.authority


@pytest.fixture(scope="module")
def trusting_gateway(
    make_gateway: GatewayFactory, fake_provider: Any, tls_provider: tuple[ThreadedRawProvider, Path]
) -> Gateway:
    config = routing_config(fake_provider.base_url)
    return make_gateway(config=config, env={"SWITCHBOARD_CA_BUNDLE": str(tls_provider[1])})


def test_a_connect_reset_then_a_success_is_one_attempt(
    trusting_gateway: Gateway, fake_provider: Any, tls_provider: tuple[ThreadedRawProvider, Path]
) -> None:
    provider, _ = tls_provider
    user = trusting_gateway.user()
    sdk = openai_client(trusting_gateway, user)
    caller = Caller(user=user, sdk=sdk, fake_provider=fake_provider)
    try:
        caller.add_key("openai", key(), base_url=f"https://localhost:{provider.port}/v1")
        raw = caller.chat()
    finally:
        sdk.close()
    assert raw.parse().choices[0].message.content == "hi"
    assert raw.headers["x-switchboard-attempts"] == "1"
    assert provider.connections == 2 and len(provider.requests) == 1
    [record] = caller.records(raw.headers["x-request-id"])
    assert (record["status"], record["attempt"]) == ("ok", 1)
