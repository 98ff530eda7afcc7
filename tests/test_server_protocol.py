"""The served HTTP protocol (server_protocol.py): one send per response, the same bytes as uvicorn's.

A real uvicorn on uvloop with the protocol `switchboard serve` uses, and a plain socket as the client,
so that what is checked is exactly what goes over the wire.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
import uvloop
from uvicorn.server import ServerState

from switchboard.server_protocol import HttpToolsHeadHolding
from tests.support.servers import uvicorn_on_uvloop

BODY = b'{"ok": true}'


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    path = scope["path"]
    if path == "/json":
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": BODY})
    elif path == "/slow-body":
        # The head must not wait for a body that comes late.
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await asyncio.sleep(0.5)
        await send({"type": "http.response.body", "body": b"late", "more_body": False})
    elif path == "/stream":
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for n in range(3):
            await send({"type": "http.response.body", "body": b"data: %d\n\n" % n, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    elif path == "/big":
        body = b"x" * 3_000_000
        headers = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    else:
        headers = [(b"content-length", b"0"), (b"connection", b"close")]
        await send(
            {"type": "http.response.start", "status": 204 if path == "/close" else 404, "headers": headers}
        )
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with uvicorn_on_uvloop(app, HttpToolsHeadHolding) as bound:
        yield bound


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock


def _read_until(sock: socket.socket, marker: bytes, have: bytes = b"") -> bytes:
    data = have
    while marker not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _read_exactly(sock: socket.socket, size: int, have: bytes) -> bytes:
    data = have
    while len(data) < size:
        chunk = sock.recv(1 << 20)
        assert chunk, "connection closed early"
        data += chunk
    return data


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nhost: t\r\n\r\n".encode()


class RecordingTransport(asyncio.Transport):
    """The socket side of a connection, recording each write the protocol makes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 5000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _writes_for(request: bytes) -> list[bytes]:
    config = uvicorn.Config(app, http=HttpToolsHeadHolding, lifespan="off", log_level="warning")
    config.load()
    protocol = HttpToolsHeadHolding(config, ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = RecordingTransport()
    protocol.connection_made(transport)
    protocol.data_received(request)
    for _ in range(20):
        await asyncio.sleep(0.01)
    protocol.connection_lost(None)
    return transport.writes


@pytest.mark.parametrize("loop_factory", [asyncio.new_event_loop, uvloop.new_event_loop])
def test_a_response_goes_out_in_one_write(loop_factory: Any) -> None:
    writes = asyncio.Runner(loop_factory=loop_factory).run(_writes_for(_get("/json")))
    assert len(writes) == 1
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and writes[0].endswith(b"\r\n\r\n" + BODY)


def test_a_stream_writes_its_head_with_the_first_event_then_one_write_per_event() -> None:
    writes = asyncio.run(_writes_for(_get("/stream")))
    assert len(writes) == 4
    assert writes[0].startswith(b"HTTP/1.1 200 OK") and writes[0].endswith(b"\r\n\r\n9\r\ndata: 0\n\n\r\n")
    assert writes[1:] == [b"9\r\ndata: 1\n\n\r\n", b"9\r\ndata: 2\n\n\r\n", b"0\r\n\r\n"]


def test_keep_alive_serves_many_responses_in_order(port: int) -> None:
    with _connect(port) as sock:
        for _ in range(50):
            sock.sendall(_get("/json"))
            data = _read_until(sock, b"\r\n\r\n")
            head, _, rest = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK")
            assert _read_exactly(sock, len(BODY), rest) == BODY


def test_the_head_goes_out_before_a_late_body(port: int) -> None:
    with _connect(port) as sock:
        sock.sendall(_get("/slow-body"))
        started = time.monotonic()
        head = _read_until(sock, b"\r\n\r\n")
        assert time.monotonic() - started < 0.4, "the head waited for the body"
        assert head.startswith(b"HTTP/1.1 200 OK")
        rest = _read_until(sock, b"0\r\n\r\n", head.partition(b"\r\n\r\n")[2])
        assert rest == b"4\r\nlate\r\n0\r\n\r\n"


def test_a_stream_is_relayed_chunk_by_chunk(port: int) -> None:
    with _connect(port) as sock:
        sock.sendall(_get("/stream"))
        data = _read_until(sock, b"0\r\n\r\n")
        body = data.partition(b"\r\n\r\n")[2]
        assert body == b"9\r\ndata: 0\n\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"


def test_a_large_body_arrives_whole(port: int) -> None:
    with _connect(port) as sock:
        sock.sendall(_get("/big"))
        data = _read_until(sock, b"\r\n\r\n")
        head, _, rest = data.partition(b"\r\n\r\n")
        assert b"content-length: 3000000" in head
        assert _read_exactly(sock, 3_000_000, rest) == b"x" * 3_000_000


def test_connection_close_flushes_the_response_then_closes(port: int) -> None:
    with _connect(port) as sock:
        sock.sendall(_get("/close"))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 204 No Content\r\n")
        assert data.endswith(b"\r\n\r\n")
