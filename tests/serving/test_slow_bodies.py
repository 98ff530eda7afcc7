"""Request bodies a slow or hostile client sends: one that stalls or drags on is answered 408 and closed.

A real uvicorn on uvloop with the protocol `switchboard serve` uses (its bounds shortened so that the
tests wait seconds, not the 15 s and 60 s of the defaults), driven over plain sockets; and one real
`switchboard serve` whose bounds come from its settings.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from switchboard.auth.tokens import TokenCodec
from switchboard.server_protocol import HeadLimits, HttpToolsHeadHolding
from tests.serving.test_hostile_clients import SWITCHBOARD, _free_port, _read_all, _response, _wait_for_health
from tests.support.gateway import TEST_AUDIENCE, TEST_JWT_SECRET
from tests.support.servers import uvicorn_on_uvloop


class ShortBodyBounds(HttpToolsHeadHolding):
    limits = HeadLimits(timeout=5.0, body_idle=1.0, body_total=4.0)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Reads the whole body, then answers its length (or nothing, if the client is gone)."""
    if scope["type"] != "http":
        return
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = orjson.dumps({"received": size})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with uvicorn_on_uvloop(app, ShortBodyBounds) as bound:
        yield bound


def _head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
        f"content-length: {length}\r\n\r\n"
    ).encode()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=15)


@pytest.mark.parametrize(
    ("path", "shape"), [("/v1/chat/completions", "openai"), ("/llm-credentials", "flat")]
)
def test_a_body_that_stops_half_way_gets_408_in_the_paths_shape_and_the_connection_closes(
    port: int, path: str, shape: str
) -> None:
    sock = _connect(port)
    sock.sendall(_head(path, 100) + b'{"model": "x", ')
    started = time.monotonic()
    status, headers, body = _response(_read_all(sock))  # the server closes; the socket's bound is 15 s
    assert status == 408
    assert time.monotonic() - started < 12, "the stalled body was not cut off near its 1 s bound"
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert headers["x-request-id"]
    error = orjson.loads(body)
    if shape == "openai":
        assert error["error"]["type"] == "invalid_request_error"
        assert "no progress" in error["error"]["message"]
    else:
        assert error["code"] == "BAD_REQUEST" and "no progress" in error["error"]


def test_a_head_with_no_body_byte_at_all_gets_408(port: int) -> None:
    sock = _connect(port)
    sock.sendall(_head("/v1/embeddings", 10))
    status, _, _ = _response(_read_all(sock))
    assert status == 408


def test_a_body_trickled_past_the_total_bound_is_cut_off_though_each_byte_is_progress(port: int) -> None:
    sock = _connect(port)
    sock.sendall(_head("/v1/chat/completions", 10_000))
    started = time.monotonic()
    cut_off = False
    for _ in range(60):  # a byte every ~0.2 s for up to 12 s: never idle for 1 s, never done
        try:
            sock.sendall(b" ")
        except (BrokenPipeError, ConnectionResetError):
            cut_off = True
            break
        time.sleep(0.2)
        if time.monotonic() - started > 12:
            break
    raw = _read_all(sock)
    assert cut_off or raw, "a body trickled for 12 s was never cut off (total bound 4 s)"
    if raw:
        status, _, body = _response(raw)
        assert status == 408
        assert "not complete within 4 s" in orjson.loads(body)["error"]["message"]


def test_a_body_sent_in_pieces_within_the_bounds_is_served(port: int) -> None:
    payload = b"x" * 3000
    sock = _connect(port)
    sock.sendall(_head("/v1/chat/completions", len(payload)))
    for start in range(0, len(payload), 1000):
        sock.sendall(payload[start : start + 1000])
        time.sleep(0.1)
    status, _, body = _response(_read_answer(sock))
    assert status == 200
    assert orjson.loads(body) == {"received": 3000}


def _read_answer(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_finished_body_is_no_longer_watched_on_its_kept_alive_connection(port: int) -> None:
    sock = _connect(port)
    sock.sendall(_head("/v1/chat/completions", 2) + b"{")  # in two pieces: the body is watched
    time.sleep(0.1)
    sock.sendall(b"}")
    status, _, body = _response(_read_answer(sock))
    assert status == 200 and orjson.loads(body) == {"received": 2}
    # Longer than the idle bound: a watch left armed would cut the connection off with a 408 now.
    time.sleep(1.5)
    sock.sendall(_head("/v1/chat/completions", 2) + b"{}")
    status, _, body = _response(_read_answer(sock))
    assert status == 200 and orjson.loads(body) == {"received": 2}


def test_200_stalled_bodies_are_all_closed(port: int) -> None:
    socks = [_connect(port) for _ in range(200)]
    for sock in socks:
        sock.sendall(_head("/v1/chat/completions", 1000) + b"{")
    statuses = [_response(_read_all(sock))[0] for sock in socks]
    assert statuses == [408] * 200
    for sock in socks:
        sock.close()


def test_switchboard_serve_takes_its_body_bounds_from_settings(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env["SWITCHBOARD_BODY_IDLE_TIMEOUT_SECONDS"] = "1"
    env["SWITCHBOARD_BODY_TIMEOUT_SECONDS"] = "3"
    env["SWITCHBOARD_JWT_SECRET"] = TEST_JWT_SECRET
    token = TokenCodec(TEST_JWT_SECRET, TEST_AUDIENCE).mint(sub=uuid.uuid4(), role="User")
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [str(SWITCHBOARD), "serve", "--port", str(port)], cwd=tmp_path, env=env, stdout=log, stderr=log
    )
    try:
        _wait_for_health(port, process, 30)
        sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            # Authenticated: the gateway reads a body only once it knows who sends it.
            head = _head("/v1/chat/completions", 500).replace(
                b"\r\n\r\n", f"\r\nauthorization: Bearer {token}\r\n\r\n".encode()
            )
            sock.sendall(head + b'{"model": ')
        status, _, body = _response(_read_all(sock))
        assert status == 408
        assert orjson.loads(body)["error"]["message"] == "the request body made no progress for 1 s"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        log.close()
