"""A bare HTTP/1.1 server on a real socket answering with hand-written bytes, for what uvicorn never sends."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import socket
import ssl
import struct
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def answer(head: bytes, body: bytes) -> bytes:
    """A response with `head` (status line and headers, each ending in CRLF) and a content-length body."""
    return head + f"content-length: {len(body)}\r\n\r\n".encode() + body


def chunked(head: bytes, *pieces: bytes) -> bytes:
    framed = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece)
    return head + b"transfer-encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n"


class RawProvider:
    """Answers the n-th request on any connection with `answers[n]` (the last one repeats); with
    `close`, ends each connection after its first answer. Records each request's head and body."""

    def __init__(self, *answers: bytes, close: bool = False, tls: ssl.SSLContext | None = None) -> None:
        self.answers = answers
        self.close = close
        self.tls = tls
        self.requests: list[bytes] = []
        self.bodies: list[bytes] = []
        self.connections = 0
        self.gone = asyncio.Event()  # a client connection ended

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                self.bodies.append(await reader.readexactly(length))
                self.requests.append(head)
                writer.write(self.answers[min(len(self.requests), len(self.answers)) - 1])
                await writer.drain()
                if self.close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            self.gone.set()
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self, host: str = "localhost") -> AsyncIterator[str]:
        """The base_url to call it by (a name by default)."""
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        port = server.sockets[0].getsockname()[1]
        async with server:
            yield f"{'https' if self.tls else 'http'}://{host}:{port}/v1"


def _read_request(conn: socket.socket | ssl.SSLSocket) -> tuple[bytes, bytes] | None:
    """One request's head and its content-length body, or None if the client left first."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = conn.recv(65536)
        if not more:
            return None
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        more = conn.recv(65536)
        if not more:
            return None
        body += more
    return head, body


class ThreadedRawProvider:
    """A bare HTTP/1.1 server on threads of its own: for a gateway served on another loop or process,
    or a test that blocks its own loop on purpose. Each connection gets one request, answered with
    `reply(head, body)`, and is then closed (the answer may say keep-alive: a stale pooled connection).

    `tls` serves HTTPS; the first `resets` connections are reset (linger 0) before the handshake, a
    connect failure with nothing of the request written. `closed` is released as each connection ends.
    """

    def __init__(
        self, reply: Callable[[bytes, bytes], bytes], tls: ssl.SSLContext | None = None, resets: int = 0
    ) -> None:
        self.reply = reply
        self.tls = tls
        self.resets = resets
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.connections = 0
        self.requests: list[bytes] = []
        self.bodies: list[bytes] = []
        self.closed = threading.Semaphore(0)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            if self.connections <= self.resets:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()  # linger 0: a reset, before any TLS byte is answered
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with self.tls.wrap_socket(conn, server_side=True) if self.tls else conn as stream:
                request = _read_request(stream)
                if request is not None:
                    self.requests.append(request[0])
                    self.bodies.append(request[1])
                    stream.sendall(self.reply(*request))
        except OSError:
            pass
        finally:
            self.closed.release()

    @contextlib.contextmanager
    def running(self, host: str = "127.0.0.1") -> Iterator[str]:
        """The base_url to call it by."""
        threading.Thread(target=self._accept, daemon=True).start()
        try:
            yield f"{'https' if self.tls else 'http'}://{host}:{self.port}/v1"
        finally:
            self.listener.close()


@dataclass(frozen=True)
class Certificates:
    server: ssl.SSLContext  # presents a certificate for `localhost` and 127.0.0.1
    trusting: ssl.SSLContext  # a client context that trusts the authority that signed it
    authority: Path  # that authority's certificate, PEM (a CA bundle)


def certificates(work: Path) -> Certificates:
    """A throwaway certificate authority and a server certificate it signed."""
    now = dt.datetime.now(dt.UTC)

    def build(
        subject: str,
        key: ec.EllipticCurvePrivateKey,
        issuer: str,
        signer: ec.EllipticCurvePrivateKey,
        ca: bool,
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = build("test authority", ca_key, "test authority", ca_key, ca=True)
    server_cert = build("localhost", server_key, "test authority", ca_key, ca=False)
    pem = serialization.Encoding.PEM
    (work / "server.pem").write_bytes(
        server_cert.public_bytes(pem)
        + server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(work / "server.pem")
    trusting = ssl.create_default_context(cadata=ca_cert.public_bytes(pem).decode())
    (work / "authority.pem").write_bytes(ca_cert.public_bytes(pem))
    return Certificates(server, trusting, work / "authority.pem")
