"""uvicorn's httptools protocol, writing a response's head and the start of its body in one send.

uvicorn writes the status line and headers as soon as `http.response.start` arrives, then the body
as a second write: two `send` syscalls, two loopback segments, per response. On the benchmark's VM a
send costs tens of microseconds of the gateway's CPU, a sizeable share of a relayed call. Here the
head is held back until the next write, which in practice follows at once (the app sends the body
right after the start), or until the event loop's next turn, whichever comes first. Nothing else
changes: the order of bytes, flow control and closing are the transport's own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

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


class HttpToolsHeadHolding(HttpToolsProtocol):
    """`switchboard serve` passes this class to uvicorn as its `http` protocol."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Flow control keeps the real transport; requests and responses go through the holder.
        self.transport = HeadHoldingTransport(transport, self.loop)
