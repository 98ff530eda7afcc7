"""A streaming ASGI response that notices a client going away at once, even while upstream is silent."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from switchboard.llm.client_watch import ClientWatch


class SSEResponse(Response):
    """Sends `text/event-stream` bytes; cancels the producer the moment the client disconnects.

    Starlette's StreamingResponse only notices a disconnect on its next write, which can be long
    after the client left when a provider stalls; this one listens for `http.disconnect` meanwhile.
    Plain asyncio rather than an anyio task group: it runs once per streamed call.

    `unstarted` runs when the response ends before the producer was ever asked for a chunk (the
    client left between the call's first event and the response's start): an async generator that
    never started never runs its own `finally`, so whatever it would settle is settled there.
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncIterator[bytes],
        headers: Mapping[str, str],
        status_code: int = 200,
        unstarted: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        # Response.__init__ is skipped on purpose: there is no body to render up front.
        self.events = events
        self.unstarted = unstarted
        self.status_code = status_code
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch = ClientWatch(receive)
        pulled = False
        try:
            await send(
                {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
            )
            pulled = True
            async for chunk in self.events:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not watch.ours():  # ours: the client left, nothing more to send
                raise
        except OSError:
            pass  # the client went away mid-write; the producer's cleanup has run
        finally:
            watch.stop()
            await self._close_events()
            if not pulled and self.unstarted is not None:
                await asyncio.shield(self.unstarted())

    async def _close_events(self) -> None:
        close = getattr(self.events, "aclose", None)
        if close is not None:
            with contextlib.suppress(RuntimeError):
                await asyncio.shield(close())
