"""One keep-alive HTTP/1.1 connection to a provider: sends a request, parses the answer with httptools.

The relay needs little of HTTP: one POST at a time per connection, the status, a few headers and the
body as it arrives. Doing exactly that on an asyncio protocol costs a fraction of a general client's
CPU per call (`python -m bench.upstream_cpu`), which is most of what the gateway adds to a call.
"""

from __future__ import annotations

import asyncio
import select
import zlib
from typing import cast

import httptools

from switchboard.upstream.endpoints import Origin

# Received body bytes held before the socket stops being read (the caller reads slower than it arrives).
HIGH_WATER = 256 * 1024
# Status line and headers together; a provider's are a few KiB, and a server sending more is not one.
MAX_HEAD = 64 * 1024


class ProtocolFailure(OSError):
    """The provider's answer is not HTTP/1.1 we can read, or the connection broke before it ended."""


class BodyTooLarge(ProtocolFailure):
    """The provider's answer inflates past the gateway's bound."""


class _Inflater:
    """`content-encoding: gzip` or `deflate`, decoded as it arrives (zlib or raw deflate, as sent),
    never past `room` bytes in all: each step inflates at most what is left of it."""

    __slots__ = ("_room", "_zlib")

    def __init__(self, room: int) -> None:
        self._zlib: zlib._Decompress | None = None
        self._room = room

    def feed(self, data: bytes) -> bytes:
        if self._zlib is None:
            # 32 + 15: a gzip or zlib header, recognised; some servers send deflate without one.
            wrapped = data[0] == 0x1F or data[0] & 0x0F == 8
            self._zlib = zlib.decompressobj(47 if wrapped else -15)
        out = self._zlib.decompress(data, self._room + 1)
        self._room -= len(out)
        if self._room < 0 or self._zlib.unconsumed_tail:
            raise BodyTooLarge("the provider's compressed answer inflates past the gateway's bound")
        return out

    def flush(self) -> bytes:
        if self._zlib is None:
            return b""
        out = self._zlib.flush(self._room + 1)
        if len(out) > self._room:
            raise BodyTooLarge("the provider's compressed answer inflates past the gateway's bound")
        return out


class Http1Connection(asyncio.Protocol):
    """The protocol of one pooled connection; the pool hands it to one exchange at a time.

    Waiting is a plain future with a timer at an absolute deadline (cheaper than `asyncio.timeout`
    per read); it raises TimeoutError when the deadline passes.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, origin: Origin, max_inflated: int = 8 * 1024 * 1024
    ) -> None:
        self._loop = loop
        self.origin = origin
        self._max_inflated = max_inflated
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.idle_since = 0.0
        self._expecting = False  # a request went out and its answer has not ended
        # Through an egress proxy, plain http asks for `http://host:port/path` (absolute form).
        self.absolute_target = b""
        self.proxy_authorization = b""  # that proxy's header line, when it asks for credentials
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._buffered = 0
        self._inflater: _Inflater | None = None
        self._headers_done = False
        self._head_size = 0
        self._complete = False
        self._until_close = False  # no length and not chunked: the body ends when the connection does
        self._keep_alive = False
        self._error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    # --- the exchange's side --------------------------------------------------------------------

    def send(self, request: bytes) -> None:
        self._reset()
        if self._transport is None or self.closed:
            raise ProtocolFailure("the provider closed the connection")
        self._expecting = True
        if self.absolute_target:  # every request head here starts with "POST /"
            line_end = request.index(b"\r\n") + 2
            request = (
                b"POST "
                + self.absolute_target
                + request[5:line_end]
                + self.proxy_authorization
                + request[line_end:]
            )
        self._transport.write(request)

    async def wait_headers(self, deadline: float) -> None:
        while not self._headers_done:
            await self._wait(deadline)

    async def wait_body(self, deadline: float) -> None:
        """Returns once some body is buffered or the body ended; raises when the connection broke."""
        if not self._body and not self._complete:
            await self._wait(deadline)

    def take(self) -> bytes:
        """The body received since the last call (b"" when none)."""
        body = self._body
        if not body:
            return b""
        self._body = []
        self._buffered = 0
        if self._paused and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return body[0] if len(body) == 1 else b"".join(body)

    @property
    def at_eof(self) -> bool:
        """The whole body has arrived and been taken."""
        return self._complete and not self._body

    @property
    def open(self) -> bool:
        """Neither side has closed it (a server closing an idle connection is seen on the next loop turn)."""
        transport = self._transport
        return not self.closed and transport is not None and not transport.is_closing()

    def peer_closed(self) -> bool:
        """The provider closed (or wrote to) this idle connection, though the loop has not read it yet.

        A pooled connection is checked before a request is written on it (SPEC §21): once written,
        a request is never sent again, so a stale one must be found before, at the cost of one poll.
        """
        sock = self._transport.get_extra_info("socket") if self._transport is not None else None
        if sock is None:
            return False
        # poll(), not select(): select() refuses a descriptor numbered 1024 or more, and a busy
        # gateway's sockets are; every pooled connection would then be taken for closed.
        poller = select.poll()
        try:
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    @property
    def reusable(self) -> bool:
        """Nothing of this exchange is left on the connection: it may carry the next one."""
        transport = self._transport
        return (
            self._complete
            and not self._body
            and self._keep_alive
            and not self.closed
            and transport is not None
            and transport.get_write_buffer_size() == 0
        )

    def close(self) -> None:
        """Drops the connection; mid-answer, the provider sees the disconnect and stops."""
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    async def _wait(self, deadline: float) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._waiter = self._loop.create_future()
        timer = self._loop.call_at(deadline, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: OSError) -> None:
        if self._error is None:
            self._error = error
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
        self.close()

    # --- asyncio's side -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is one without subclassing it

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self._expecting:
            return
        if self._until_close and exc is None:
            self._end_of_body()
        else:
            self._fail(ProtocolFailure("the provider closed the connection before its answer ended"))

    def data_received(self, data: bytes) -> None:
        if not self._expecting:  # nothing was asked: a server talking out of turn is not reused
            self.close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(ProtocolFailure("the provider switched protocols"))
            return
        except httptools.HttpParserError:
            self._fail(self._error or ProtocolFailure("the provider's answer is not valid HTTP/1.1"))
            return
        if not self._headers_done:
            self._head_size += len(data)
            if self._head_size > MAX_HEAD:  # httptools holds headers until they end: no endless wait
                self._fail(ProtocolFailure("the provider's answer has oversized headers"))

    # --- httptools' callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if not self._expecting:
            raise ProtocolFailure("the provider sent an answer nothing asked for")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        raw, self._raw_headers = self._raw_headers, []
        if status < 200:  # 100 Continue, 103 Early Hints: the answer is still to come
            return
        headers = self.headers
        for name, value in raw:
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.status = status
        self._keep_alive = self._parser.should_keep_alive()
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._inflater = _Inflater(self._max_inflated)
        elif encoding not in ("identity", ""):
            self._error = ProtocolFailure("the provider answered in an encoding the gateway cannot read")
            raise self._error
        self._until_close = (
            "content-length" not in headers
            and "transfer-encoding" not in headers
            and status not in (204, 304)
        )
        self._headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self._inflater is not None:
            try:
                body = self._inflater.feed(body)
            except zlib.error:
                self._error = ProtocolFailure("the provider's compressed body is corrupt")
                raise self._error from None
            except BodyTooLarge as exc:
                self._error = exc
                raise
        if body:
            self._body.append(body)
            self._buffered += len(body)
            if self._buffered > HIGH_WATER and not self._paused and self._transport is not None:
                self._paused = True
                self._transport.pause_reading()
            self._wake()

    def on_message_complete(self) -> None:
        if self._headers_done:  # otherwise an interim (1xx) answer ended
            self._end_of_body()

    def _end_of_body(self) -> None:
        if self._inflater is not None:
            try:
                rest = self._inflater.flush()
            except zlib.error:
                rest = b""
            except BodyTooLarge as exc:
                self._error = exc
                raise
            if rest:
                self._body.append(rest)
        self._expecting = False
        self._complete = True
        self._wake()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
