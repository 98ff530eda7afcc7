"""A connect that failed wrote nothing (SPEC §21): the gateway connects again on a fresh connection,
and the caller sees one attempt, one usage record."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.conftest import GatewayFactory
from tests.routing.conftest import Caller, key, routing_config
from tests.support.gateway import Gateway
from tests.upstream.raw_server import answer, certificates

COMPLETION = (
    b'{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}'
)


class ResetsItsFirstConnection:
    """A TLS provider on a thread: its first connection is reset before the handshake, every later
    one answers each request with a completion. Counts connections and requests."""

    def __init__(self, server: ssl.SSLContext) -> None:
        self.tls = server
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.requests = 0

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.accepted == 1:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()  # linger 0: a reset, before any TLS byte is answered
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            with self.tls.wrap_socket(conn, server_side=True) as tls:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += tls.recv(65536) or b"!"
                head, body = data.split(b"\r\n\r\n", 1)
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                while len(body) < length:
                    body += tls.recv(65536)
                self.requests += 1
                tls.sendall(
                    answer(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n",
                        COMPLETION,
                    )
                )
        except (OSError, StopIteration):
            pass


@pytest.fixture(scope="module")
def tls_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ResetsItsFirstConnection, Path]]:
    certs = certificates(tmp_path_factory.mktemp("certs"))
    provider = ResetsItsFirstConnection(certs.server)
    thread = threading.Thread(target=provider.serve, daemon=True)
    thread.start()
    yield provider, certs.authority
    provider.listener.close()


@pytest.fixture(scope="module")
def trusting_gateway(
    make_gateway: GatewayFactory, fake_provider: Any, tls_provider: tuple[ResetsItsFirstConnection, Path]
) -> Gateway:
    config = routing_config(fake_provider.base_url)
    return make_gateway(config=config, env={"SWITCHBOARD_CA_BUNDLE": str(tls_provider[1])})


def test_a_connect_reset_then_a_success_is_one_attempt(
    trusting_gateway: Gateway, fake_provider: Any, tls_provider: tuple[ResetsItsFirstConnection, Path]
) -> None:
    provider, _ = tls_provider
    user = trusting_gateway.user()
    sdk = openai.OpenAI(base_url=f"{trusting_gateway.url}/v1", api_key=user.token, max_retries=0, timeout=20)
    caller = Caller(user=user, sdk=sdk, fake_provider=fake_provider)
    try:
        caller.add_key("openai", key(), base_url=f"https://localhost:{provider.port}/v1")
        raw = caller.chat()
    finally:
        sdk.close()
    assert raw.parse().choices[0].message.content == "hi"
    assert raw.headers["x-switchboard-attempts"] == "1"
    assert provider.accepted == 2 and provider.requests == 1
    [record] = caller.records(raw.headers["x-request-id"])
    assert (record["status"], record["attempt"]) == ("ok", 1)
