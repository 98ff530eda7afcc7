"""A client that leaves a call it is waiting for cancels the provider call; the record says cancelled."""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

import orjson
import pytest

from tests.llm.conftest import Caller, unique_model

MESSAGES = [{"role": "user", "content": "hi"}]


def _leave_after_sending(
    url: str, token: str, body: dict[str, Any], request_id: str, fake_provider: Any
) -> None:
    """A raw client: the whole request, then, once the provider holds it, hangs up without reading a byte."""
    host, port = url.removeprefix("http://").split(":")
    payload = orjson.dumps(body)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {token}\r\n"
        f"content-type: application/json\r\nx-request-id: {request_id}\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    )
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(head.encode() + payload)
        model = body["model"].split("/", 1)[1]
        deadline = time.monotonic() + 10
        while not fake_provider.received(model):
            assert time.monotonic() < deadline, "the provider never received the call"
            time.sleep(0.01)


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_leaving_a_waiting_call_cancels_the_provider_call(
    caller: Caller, fake_provider: Any, stream: bool
) -> None:
    model = unique_model("gone")
    fake_provider.script(model, first_byte_delay=30)
    request_id = uuid.uuid4().hex
    started = time.monotonic()
    _leave_after_sending(
        caller.user.client.base_url.__str__().rstrip("/"),
        caller.user.token,
        {"model": f"openai/{model}", "messages": MESSAGES, "stream": stream},
        request_id,
        fake_provider,
    )
    disconnect = fake_provider.wait_disconnect_sync(model, timeout=10)
    assert disconnect is not None, "the provider was never told the caller left"
    assert disconnect.at - started < 10
    deadline = time.monotonic() + 10
    while True:
        records = [
            r
            for r in caller.user.client.get("/usage/me", params={"limit": 500}).json()["data"]
            if r["request_id"] == request_id
        ]
        if records or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    (record,) = records
    assert record["status"] == "cancelled"
