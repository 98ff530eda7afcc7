"""uvicorn's httptools protocol, with bounded request heads and a response's head sent with its body.

It subclasses a class uvicorn does not publish as API, so uvicorn is pinned exactly in pyproject.toml
and tests/serving/test_uvicorn_pin.py fails when the module it builds on changes.

Request heads (SPEC §19): a connection that has not sent a complete head within `HeadLimits.timeout`
seconds of opening (or of its previous answer) is closed, however it trickles bytes; a head over
`max_bytes`, with a line over `max_line` or more than `max_lines` lines is answered 431 and closed
before it can grow further; a head the parser rejects (control bytes in a header value, …) is
answered 400 in the path's JSON error shape, never uvicorn's text/plain.

Request bodies: a body that makes no progress for `HeadLimits.body_idle` seconds, or is not complete
`body_total` seconds after its head, is answered 408 in the path's JSON shape (or, if the app has
already begun its answer, cut off) and the connection closed. A body the server itself stopped
reading (flow control, while the app has not read what came) is never counted as stalled. A body
that arrives with its head, the usual case, arms no timer at all.

uvicorn writes the status line and headers as soon as `http.response.start` arrives, then the body
as a second write: two `send` syscalls, two loopback segments, per response. On the benchmark's VM a
send costs tens of microseconds of the gateway's CPU, a sizeable share of a relayed call. Here the
head is held back until the next write, which in practice follows at once (the app sends the body
right after the start), or until the event loop's next turn, whichever comes first. Nothing else
changes: the order of bytes, flow control and closing are the transport's own.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

import httptools
import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from switchboard.error_shapes import error_body, surface_for
from switchboard.errors import BadRequest, HeadTooLarge, RequestTimeout, SwitchboardError

_HEAD = b"HTTP/1.1 "


class HeadHoldingTransport(asyncio.Transport):
    """Wraps the connection's transport; holds a write that starts a response until the next one."""

    __slots__ = ("_held", "_inner", "_loop")

    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._inner = inner
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._inner.write(held + bytes(data))
        elif data[:9] == _HEAD:
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
        else:
            self._inner.write(data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._inner.is_closing():
                self._inner.write(held)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def close(self) -> None:
        self.flush()
        self._inner.close()

    def abort(self) -> None:
        self._held = None
        self._inner.abort()

    def write_eof(self) -> None:
        self.flush()
        self._inner.write_eof()

    def can_write_eof(self) -> bool:
        return self._inner.can_write_eof()

    def is_closing(self) -> bool:
        return self._inner.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._inner.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._inner.pause_reading()

    def resume_reading(self) -> None:
        self._inner.resume_reading()

    def is_reading(self) -> bool:
        return self._inner.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._inner.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._inner.get_write_buffer_size() + len(self._held or b"")

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._inner.get_write_buffer_limits()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._inner.get_protocol()


@dataclass(frozen=True)
class HeadLimits:
    timeout: float = 15.0  # seconds to send a complete request head
    max_bytes: int = 64 * 1024  # the request line and every header together
    max_line: int = 1024 * 1024  # one header, name and value
    max_lines: int = 200  # headers in one head
    body_idle: float = 15.0  # seconds a request body may make no progress
    body_total: float = 60.0  # seconds from the end of a head to the end of its body


class HttpToolsHeadHolding(HttpToolsProtocol):
    """`switchboard serve` passes this class to uvicorn as its `http` protocol."""

    limits: ClassVar[HeadLimits] = HeadLimits()  # set by the worker from its settings

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Flow control keeps the real transport; requests and responses go through the holder.
        self.transport = HeadHoldingTransport(transport, self.loop)
        self._refused = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._in_body = False
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_started = 0.0  # loop time the head ended
        self._body_moved = 0.0  # loop time body bytes last arrived
        self._await_head()

    def _await_head(self) -> None:
        """A new head is due: counted from zero, within one deadline that no byte extends."""
        self._in_head = True
        self._head_pending = 0  # bytes fed while the head is incomplete (bounds the parser's buffer)
        self._head_bytes = 0  # exact: the request line and headers parsed so far
        self._head_lines = 0
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.limits.timeout, self._head_timed_out)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._body_done()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            self._refuse(cause if isinstance(cause, SwitchboardError) else _malformed())
            return
        except httptools.HttpParserError:
            self._refuse(_malformed())
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        if self._in_head:
            self._head_pending += len(data)
            if self._head_pending > self.limits.max_bytes:
                self._refuse(_too_large(f"over {self.limits.max_bytes} bytes"))
        elif self._in_body:
            self._body_moved = self.loop.time()
            if self._body_timer is None:  # the body did not come whole with its head: it is watched
                self._body_timer = self.loop.call_at(self._body_deadline(), self._body_check)

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_lines += 1
        if self._head_lines > self.limits.max_lines:
            raise _too_large(f"more than {self.limits.max_lines} header lines")
        if len(name) + len(value) > self.limits.max_line:
            raise _too_large(f"a header line over {self.limits.max_line} bytes")
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.limits.max_bytes:
            raise _too_large(f"over {self.limits.max_bytes} bytes")

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._in_body = True  # until on_message_complete, which a bodiless request reaches at once
        self._body_started = self._body_moved = self.loop.time()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._body_done()
        super().on_message_complete()

    def _body_done(self) -> None:
        self._in_body = False
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_deadline(self) -> float:
        limits = self.limits
        return min(self._body_moved + limits.body_idle, self._body_started + limits.body_total)

    def _body_check(self) -> None:
        self._body_timer = None
        if not self._in_body or self.transport.is_closing():
            return
        now = self.loop.time()
        if self.flow.read_paused:  # the server stopped reading, not the client sending
            self._body_moved = now
        deadline = self._body_deadline()
        if now < deadline:
            self._body_timer = self.loop.call_at(deadline, self._body_check)
            return
        self._body_done()
        cycle = self.cycle
        if cycle is None or cycle.response_started:
            self.transport.close()  # an answer is under way: it cannot become a 408
            return
        # The app, waiting for the rest of the body, hears that the client has gone; nothing it
        # sends from now on is written.
        cycle.disconnected = True
        cycle.message_event.set()
        slow = now - self._body_started >= self.limits.body_total
        self._refuse(
            RequestTimeout(
                f"the request body was not complete within {self.limits.body_total:g} s"
                if slow
                else f"the request body made no progress for {self.limits.body_idle:g} s"
            )
        )

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self._await_head()

    def _refuse(self, error: SwitchboardError) -> None:
        """Answers a head that will not be served in the path's JSON error shape, then closes."""
        self._refused = True
        self._in_head = False
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if self.transport.is_closing():
            return
        path = (self.url or b"/").split(b"?", 1)[0].decode("latin-1") if hasattr(self, "url") else "/"
        body = orjson.dumps(error_body(error, surface_for(path)))
        head = [
            STATUS_LINE[error.status],
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"x-request-id: " + uuid.uuid4().hex.encode() + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def _malformed() -> SwitchboardError:
    return BadRequest("malformed HTTP request head (a control character in a header value, or bad syntax)")


def _too_large(why: str) -> SwitchboardError:
    return HeadTooLarge(f"request head too large: {why}")
