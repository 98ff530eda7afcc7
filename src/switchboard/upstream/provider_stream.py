"""A provider's event stream read off a pooled connection, cut into OpenAI-format chunk events."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

from switchboard.errors import SwitchboardError, UpstreamFailed
from switchboard.upstream import provider_errors, relay_exchange
from switchboard.upstream.connection_pool import ConnectionPool, ProviderConnections
from switchboard.upstream.endpoints import Endpoint
from switchboard.upstream.http1 import Http1Connection
from switchboard.upstream.relay_exchange import FAILURES
from switchboard.upstream.types import StreamEvent, UpstreamStream, UpstreamTarget, Usage

DRAIN_SECONDS = 1.0


class EventSource(Protocol):
    """Turns the body's bytes into OpenAI chunk events: sse.EventSplitter relays OpenAI's own, an
    adapter's splitter maps another provider's."""

    @property
    def done(self) -> bool:
        """The provider said the stream is over (OpenAI's `[DONE]`); what follows is not read."""
        ...

    @property
    def usage(self) -> Usage | None: ...

    @property
    def failure(self) -> SwitchboardError | None:
        """The provider's in-stream error, raised once the events before it have gone out (on the
        first `__anext__` when none came before it: the call may then move on to its next route).
        Its `provider_event` holds a byte relay's error event, which `feed` did not return."""
        ...

    def feed(self, chunk: bytes) -> list[StreamEvent]: ...

    def flush(self) -> list[StreamEvent]: ...


class ProviderStream(UpstreamStream):
    def __init__(
        self,
        connections: ProviderConnections,
        target: UpstreamTarget,
        endpoint: Endpoint,
        content: bytes,
        source: EventSource,
        wants_usage: bool,
        headers: bytes = b"",
    ) -> None:
        self.client_wants_usage = wants_usage
        self.usage: Usage | None = None
        self._connections = connections
        self._endpoint = endpoint
        self._target = target
        self._content = content
        self._headers = headers
        self._timeouts = connections.timeouts
        self._pool: ConnectionPool | None = None
        self._conn: Http1Connection | None = None
        self._splitter = source
        self._pending: deque[StreamEvent] = deque()
        self._deadline = 0.0
        self._started = False  # an event went out: from now on the idle timeout applies
        self._eof = False
        self._closed = False

    async def __anext__(self) -> StreamEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if self._conn is None:
                first_byte = self._target.first_byte or self._timeouts.first_byte
                self._deadline = asyncio.get_running_loop().time() + first_byte
                self._pool = self._connections.pool(self._target.allow_private)
                self._conn = await relay_exchange.open_response(
                    self._pool,
                    self._timeouts,
                    self._target,
                    self._endpoint,
                    self._content,
                    self._deadline,
                    self._headers,
                )
                if not self._conn.headers.get("content-type", "").startswith("text/event-stream"):
                    # An HTML page or a JSON body where events were asked for: nothing to relay.
                    raise UpstreamFailed("the provider answered a stream request without an event stream")
            while not self._pending and not self._eof:
                await self._read_more(self._conn)
            if self._pending:
                self._started = True
                return self._pending.popleft()
            if self._splitter.failure is not None:
                raise self._splitter.failure
        except SwitchboardError:
            await self.aclose()
            raise
        except FAILURES as exc:
            await self.aclose()
            raise provider_errors.from_transport(exc) from None
        except BaseException:
            # Cancelled mid-read: drop the provider connection now (close is synchronous), not when
            # the caller gets round to aclose().
            await self.aclose()
            raise
        await self.aclose()
        raise StopAsyncIteration

    def ready(self) -> list[StreamEvent]:
        taken = list(self._pending)
        self._pending.clear()
        return taken

    async def _read_more(self, conn: Http1Connection) -> None:
        loop = asyncio.get_running_loop()
        if self._splitter.done:  # the caller sends its own [DONE]
            # Read on to the end of the body so the connection goes back to the pool, but a server
            # that keeps it open after [DONE] has still answered in full.
            try:
                await conn.wait_body(loop.time() + min(self._timeouts.idle, DRAIN_SECONDS))
            except TimeoutError:
                self._eof = True
                self._pending.extend(self._splitter.flush())
                return
        else:
            await conn.wait_body(loop.time() + self._timeouts.idle if self._started else self._deadline)
        chunk = conn.take()
        if chunk:
            self._pending.extend(self._splitter.feed(chunk))
        if self._splitter.failure is not None:
            self._eof = True  # nothing after a provider's error is read
        elif conn.at_eof:
            self._eof = True
            self._pending.extend(self._splitter.flush())
        # Also when the error came in this read: the usage read before it (Anthropic's
        # message_start) is the provider's count, not to be estimated.
        self.usage = self._splitter.usage
        # Only OpenAI's own splitter (sse.py) tells; an adapter's splitter maps what it parses.
        self.malformed = getattr(self._splitter, "malformed", False)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._conn is not None and self._pool is not None:
            self._pool.release(self._conn)  # mid-body this closes the connection: the provider stops
