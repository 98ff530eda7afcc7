"""Request heads a hostile or broken client sends: bounded in time, size and lines; refusals are JSON.

A real uvicorn on uvloop with the protocol `switchboard serve` uses, driven over plain sockets so that
what is checked is what goes over the wire; and one real `switchboard serve` under a 1,024-file limit.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from switchboard.server_protocol import HeadLimits, HttpToolsHeadHolding
from tests.support.recorder import tls_context
from tests.support.servers import uvicorn_on_uvloop

SWITCHBOARD = Path(sys.executable).with_name("switchboard")


class ShortDeadline(HttpToolsHeadHolding):
    limits = HeadLimits(timeout=1.0)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = orjson.dumps({"headers": len(scope["headers"])})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with uvicorn_on_uvloop(app, ShortDeadline) as bound:
        yield bound


def _connect(port: int, timeout: float = 10) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def _response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def test_a_connection_trickling_an_unfinished_head_is_closed_at_its_deadline(port: int) -> None:
    sock = _connect(port)
    sock.sendall(b"GET /x HTTP/1.1\r\nhost: t\r\n")
    closed = False
    for _ in range(60):  # trickled bytes, ~0.2 s apart, for up to 12 s: none extends the deadline
        try:
            sock.sendall(b"x-a: 1\r\n")
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        time.sleep(0.2)
    if not closed:
        sock.settimeout(5)
        closed = _read_all(sock) == b""
    assert closed, "a head trickled for 12 s was never cut off (deadline 1 s)"


def test_an_idle_keep_alive_connection_is_closed(port: int) -> None:
    sock = _connect(port)
    sock.sendall(b"GET /x HTTP/1.1\r\nhost: t\r\n\r\n")
    first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200")
    sock.settimeout(10)
    assert sock.recv(65536) == b"", "an idle keep-alive connection stayed open"


def test_a_head_of_100_lines_and_12_kib_is_served(port: int) -> None:
    headers = "".join(f"x-h{n}: {'v' * 110}\r\n" for n in range(100))
    sock = _connect(port)
    sock.sendall(f"GET /x HTTP/1.1\r\nhost: t\r\n{headers}\r\n".encode())
    status, _, body = _response(_read_until_body(sock))
    assert status == 200
    assert orjson.loads(body) == {"headers": 101}


def _read_until_body(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize(
    ("why", "head"),
    [
        ("201 lines", "".join(f"x-h{n}: v\r\n" for n in range(201))),
        ("65 KiB in all", "".join(f"x-h{n}: {'v' * 1000}\r\n" for n in range(66))),
        ("one 70 KiB line", f"x-big: {'v' * 70_000}\r\n"),
    ],
)
def test_a_head_over_the_limits_gets_431_in_json_and_the_connection_closes(
    port: int, why: str, head: str
) -> None:
    sock = _connect(port)
    # The server may close before the client finished writing.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(f"GET /v1/models HTTP/1.1\r\nhost: t\r\n{head}\r\n".encode())
    status, headers, body = _response(_read_all(sock))
    assert status == 431, why
    assert headers["content-type"] == "application/json"
    assert headers["x-request-id"]
    assert headers["connection"] == "close"
    assert orjson.loads(body)["error"]["type"] == "invalid_request_error"  # /v1: OpenAI's shape


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_an_endless_header_is_cut_off_before_the_server_grows(port: int) -> None:
    before = _rss_bytes()
    sock = _connect(port)
    sock.sendall(b"GET /health HTTP/1.1\r\nhost: t\r\nx-endless: ")
    chunk = b"a" * 65536
    sent = 0
    try:
        while sent < 200 * 1024 * 1024:  # 200 MB offered; the server must stop reading long before
            sock.sendall(chunk)
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, _, body = _response(_read_all(sock))
    assert status == 431
    assert orjson.loads(body) == {
        "error": orjson.loads(body)["error"],
        "code": "REQUEST_HEADER_FIELDS_TOO_LARGE",
    }
    assert sent < 200 * 1024 * 1024, "the server kept reading an endless header"
    assert _rss_bytes() - before < 20 * 1024 * 1024


@pytest.mark.parametrize(
    ("path", "shape"),
    [("/v1/chat/completions", "openai"), ("/agents", "registry"), ("/llm-credentials", "flat")],
)
@pytest.mark.parametrize("byte", [b"\x00", b"\x01", b"\x07", b"\x1b", b"\x7f", b"\r"])
def test_a_control_byte_in_a_header_value_gets_400_in_the_paths_json_shape(
    port: int, path: str, shape: str, byte: bytes
) -> None:
    sock = _connect(port)
    value = b"a" + byte + b"b" if byte != b"\r" else b"a\rb"
    sock.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nhost: t\r\nx-bad: " + value + b"\r\n\r\n")
    status, headers, body = _response(_read_all(sock))
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert headers["x-request-id"]
    error = orjson.loads(body)
    if shape == "openai":
        assert error["error"]["type"] == "invalid_request_error" and error["error"]["message"]
    elif shape == "registry":
        assert error["error"]["code"] == "BAD_REQUEST" and error["error"]["message"]
    else:
        assert error["code"] == "BAD_REQUEST" and isinstance(error["error"], str)


def test_1100_idle_sockets_against_a_1024_file_limit_do_not_keep_health_from_answering(
    tmp_path: Path,
) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env["SWITCHBOARD_HEAD_TIMEOUT_SECONDS"] = "3"

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [str(SWITCHBOARD), "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=log,
        preexec_fn=limit_files,
    )
    idle: list[socket.socket] = []
    try:
        _wait_for_health(port, process, 30)
        for _ in range(1100):
            try:
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break  # the backlog is full: what is open is enough to exhaust the server's files
        assert len(idle) >= 1000
        started = time.monotonic()
        response = _wait_for_health(port, process, 30)
        assert response.status_code == 200
        assert time.monotonic() - started < 30
    finally:
        for sock in idle:
            sock.close()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
        log.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_health(port: int, process: subprocess.Popen[bytes], timeout: float) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, f"switchboard serve exited with {process.returncode}"
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2, verify=tls_context())
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
