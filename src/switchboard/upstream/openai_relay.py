"""The OpenAI-format relay: the body passed through, response bytes forwarded as they arrive."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

from switchboard.errors import SwitchboardError
from switchboard.upstream import exchange, provider_errors
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.sse import Event, EventSplitter
from switchboard.upstream.types import (
    StreamEvent,
    UpstreamReply,
    UpstreamStream,
    UpstreamTarget,
    Usage,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DRAIN_SECONDS = 1.0


class OpenAIRelay:
    def __init__(self, pool: ClientPool) -> None:
        self._pool = pool

    def _request(self, target: UpstreamTarget, path: str, body: dict[str, Any]) -> httpx.Request:
        url = (target.base_url or DEFAULT_BASE_URL).rstrip("/") + path
        return exchange.build(
            self._pool, target, url, body, {"authorization": f"Bearer {target.secret.reveal()}"}
        )

    async def _json(self, target: UpstreamTarget, path: str, body: dict[str, Any]) -> UpstreamReply:
        request = self._request(target, path, {**body, "model": target.model})
        data = await exchange.post_json(self._pool, target, request)
        return UpstreamReply(body=data, usage=_usage_of(data))

    async def chat(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        return await self._json(target, "/chat/completions", body)

    async def embeddings(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        return await self._json(target, "/embeddings", body)

    def chat_stream(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamStream:
        options = body.get("stream_options")
        options = dict(options) if isinstance(options, dict) else {}
        wants_usage = bool(options.get("include_usage"))
        options["include_usage"] = True  # usage is always metered, whatever the client asked
        request = self._request(
            target,
            "/chat/completions",
            {**body, "model": target.model, "stream": True, "stream_options": options},
        )
        return OpenAIStream(self, target, request, wants_usage)


class OpenAIStream(UpstreamStream):
    def __init__(
        self, relay: OpenAIRelay, target: UpstreamTarget, request: httpx.Request, wants_usage: bool
    ) -> None:
        self.client_wants_usage = wants_usage
        self.usage: Usage | None = None
        self._relay = relay
        self._target = target
        self._request = request
        self._timeouts = relay._pool.timeouts
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._splitter = EventSplitter()
        self._pending: deque[Event] = deque()
        self._deadline = 0.0
        self._started = False  # an event went out: from now on the idle timeout applies
        self._done = False  # `data: [DONE]` seen
        self._eof = False
        self._closed = False

    async def __anext__(self) -> StreamEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if self._response is None:
                self._deadline = asyncio.get_running_loop().time() + self._timeouts.first_byte
                self._response = await exchange.open_response(
                    self._relay._pool, self._target, self._request, self._deadline
                )
                self._chunks = self._response.aiter_bytes()
            while True:
                while self._pending:
                    event = self._pending.popleft()
                    if event.done:
                        self._done = True  # the caller sends its own [DONE]
                        continue
                    if event.usage is not None:
                        self.usage = event.usage
                    self._started = True
                    return StreamEvent(event.data, event.is_usage_only)
                if self._eof:
                    await self.aclose()
                    raise StopAsyncIteration
                await self._read_more()
        except SwitchboardError:
            await self.aclose()
            raise
        except exchange.FAILURES as exc:
            await self.aclose()
            raise provider_errors.from_transport(exc) from None

    async def _read_more(self) -> None:
        assert self._chunks is not None
        if self._done:
            # Read on to the end of the body so the connection goes back to the pool, but a server
            # that keeps it open after [DONE] has still answered in full.
            try:
                async with asyncio.timeout(min(self._timeouts.idle, DRAIN_SECONDS)):
                    chunk = await anext(self._chunks, None)
            except TimeoutError:
                chunk = None
        else:
            timer = (
                asyncio.timeout(self._timeouts.idle) if self._started else asyncio.timeout_at(self._deadline)
            )
            async with timer:
                chunk = await anext(self._chunks, None)
        if chunk is None:
            self._eof = True
            self._pending.extend(self._splitter.flush())
        else:
            self._pending.extend(self._splitter.feed(chunk))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._chunks is not None:
            # RuntimeError: still running in a task being cancelled; closing the response suffices.
            with contextlib.suppress(RuntimeError):
                await self._chunks.aclose()  # type: ignore[attr-defined]
        if self._response is not None:
            await self._response.aclose()  # mid-body this drops the connection: the provider stops


def _usage_of(data: bytes) -> Usage | None:
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    usage = payload.get("usage") if isinstance(payload, dict) else None
    return Usage.from_openai(usage) if isinstance(usage, dict) else None
