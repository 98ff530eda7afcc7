"""The OpenAI-format relay: the body passed through, response bytes forwarded as they arrive."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import aiohttp
import orjson
from yarl import URL

from switchboard.errors import BadRequest, SwitchboardError
from switchboard.upstream import provider_errors, session_exchange
from switchboard.upstream.session_exchange import FAILURES
from switchboard.upstream.sessions import SessionPool
from switchboard.upstream.sse import EventSplitter
from switchboard.upstream.types import (
    StreamEvent,
    UpstreamReply,
    UpstreamStream,
    UpstreamTarget,
    Usage,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DRAIN_SECONDS = 1.0
URL_CACHE_SIZE = 1024  # parsed endpoint URLs kept (one per credential base_url and path)


class OpenAIRelay:
    def __init__(self, sessions: SessionPool) -> None:
        self.sessions = sessions
        self._urls: dict[tuple[str | None, str], URL] = {}

    def url(self, target: UpstreamTarget, path: str) -> URL:
        """The endpoint, parsed once per base_url (aiohttp also caches what it derives from it)."""
        key = (target.base_url, path)
        url = self._urls.get(key)
        if url is None:
            try:
                url = URL((target.base_url or DEFAULT_BASE_URL).rstrip("/") + path)
            except ValueError:
                raise provider_errors.unusable_base_url() from None
            if len(self._urls) >= URL_CACHE_SIZE:
                self._urls.clear()
            self._urls[key] = url
        return url

    async def _json(self, target: UpstreamTarget, path: str, body: dict[str, Any]) -> UpstreamReply:
        data = await session_exchange.post_json(
            self.sessions.session(target.allow_private),
            self.sessions.timeouts,
            target,
            self.url(target, path),
            _encode({**body, "model": target.model}),
            _auth(target),
        )
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
        content = _encode({**body, "model": target.model, "stream": True, "stream_options": options})
        return OpenAIStream(self, target, content, wants_usage)


class OpenAIStream(UpstreamStream):
    def __init__(self, relay: OpenAIRelay, target: UpstreamTarget, content: bytes, wants_usage: bool) -> None:
        self.client_wants_usage = wants_usage
        self.usage: Usage | None = None
        self._relay = relay
        self._target = target
        self._content = content
        self._timeouts = relay.sessions.timeouts
        self._response: aiohttp.ClientResponse | None = None
        self._splitter = EventSplitter()
        self._pending: deque[StreamEvent] = deque()
        self._deadline = 0.0
        self._started = False  # an event went out: from now on the idle timeout applies
        self._eof = False
        self._closed = False

    async def __anext__(self) -> StreamEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            if self._response is None:
                self._deadline = asyncio.get_running_loop().time() + self._timeouts.first_byte
                self._response = await session_exchange.open_response(
                    self._relay.sessions.session(self._target.allow_private),
                    self._timeouts,
                    self._target,
                    self._relay.url(self._target, "/chat/completions"),
                    self._content,
                    _auth(self._target),
                    self._deadline,
                )
            while not self._pending and not self._eof:
                await self._read_more()
            if self._pending:
                self._started = True
                return self._pending.popleft()
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

    async def _read_more(self) -> None:
        assert self._response is not None
        content = self._response.content
        if self._splitter.done:  # the caller sends its own [DONE]
            # Read on to the end of the body so the connection goes back to the pool, but a server
            # that keeps it open after [DONE] has still answered in full.
            try:
                async with asyncio.timeout(min(self._timeouts.idle, DRAIN_SECONDS)):
                    chunk = await content.readany()
            except TimeoutError:
                chunk = b""
        else:
            timer = (
                asyncio.timeout(self._timeouts.idle) if self._started else asyncio.timeout_at(self._deadline)
            )
            async with timer:
                chunk = await content.readany()
        if chunk:
            self._pending.extend(self._splitter.feed(chunk))
        else:
            self._eof = True
            self._pending.extend(self._splitter.flush())
        self.usage = self._splitter.usage

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._response is not None:
            session_exchange.finish(self._response)  # mid-body this drops the connection: the provider stops


def _encode(body: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        raise BadRequest("the request body cannot be encoded as JSON") from None


def _auth(target: UpstreamTarget) -> dict[str, str]:
    return {"authorization": "Bearer " + target.secret.reveal()}


def _usage_of(data: bytes) -> Usage | None:
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    usage = payload.get("usage") if isinstance(payload, dict) else None
    return Usage.from_openai(usage) if isinstance(usage, dict) else None
