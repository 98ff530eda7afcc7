"""The OpenAI-format relay: the body passed through, response bytes forwarded as they arrive."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import orjson

from switchboard.errors import BadRequest, SwitchboardError, UpstreamFailed
from switchboard.upstream import endpoints, provider_errors, relay_exchange
from switchboard.upstream.connection_pool import ConnectionPool, ProviderConnections
from switchboard.upstream.endpoints import Endpoint
from switchboard.upstream.http1 import Http1Connection
from switchboard.upstream.relay_exchange import FAILURES
from switchboard.upstream.sse import EventSplitter
from switchboard.upstream.types import StreamEvent, UpstreamReply, UpstreamStream, UpstreamTarget, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DRAIN_SECONDS = 1.0
ENDPOINT_CACHE_SIZE = 1024  # parsed endpoints kept (one per credential base_url and path)


class OpenAIRelay:
    def __init__(self, connections: ProviderConnections) -> None:
        self.connections = connections
        self._endpoints: dict[tuple[str | None, str], Endpoint] = {}

    def endpoint(self, target: UpstreamTarget, path: str) -> Endpoint:
        """Parsed once per base_url and path: a call only appends its key and body to the head."""
        key = (target.base_url, path)
        endpoint = self._endpoints.get(key)
        if endpoint is None:
            try:
                endpoint = endpoints.parse(target.base_url or DEFAULT_BASE_URL, path)
            except ValueError:
                raise provider_errors.unusable_base_url() from None
            if len(self._endpoints) >= ENDPOINT_CACHE_SIZE:
                self._endpoints.clear()
            self._endpoints[key] = endpoint
        return endpoint

    async def _json(self, target: UpstreamTarget, path: str, body: dict[str, Any]) -> UpstreamReply:
        data = await relay_exchange.post_json(
            self.connections.pool(target.allow_private),
            self.connections.timeouts,
            target,
            self.endpoint(target, path),
            _encode({**body, "model": target.model}),
        )
        return UpstreamReply(body=data, usage=_usage_of(data))  # raises on what is no answer

    async def chat(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        return await self._json(target, "/chat/completions", body)

    async def embeddings(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        return await self._json(target, "/embeddings", body)

    async def completions(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        return await self._json(target, "/completions", body)

    def chat_stream(
        self, target: UpstreamTarget, body: dict[str, Any], path: str = "/chat/completions"
    ) -> UpstreamStream:
        options = body.get("stream_options")
        options = dict(options) if isinstance(options, dict) else {}
        wants_usage = bool(options.get("include_usage"))
        options["include_usage"] = True  # usage is always metered, whatever the client asked
        content = _encode({**body, "model": target.model, "stream": True, "stream_options": options})
        return OpenAIStream(self, target, content, wants_usage, path)


class OpenAIStream(UpstreamStream):
    def __init__(
        self, relay: OpenAIRelay, target: UpstreamTarget, content: bytes, wants_usage: bool, path: str
    ) -> None:
        self.client_wants_usage = wants_usage
        self._path = path
        self.usage: Usage | None = None
        self._relay = relay
        self._target = target
        self._content = content
        self._timeouts = relay.connections.timeouts
        self._pool: ConnectionPool | None = None
        self._conn: Http1Connection | None = None
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
            if self._conn is None:
                self._deadline = asyncio.get_running_loop().time() + self._timeouts.first_byte
                self._pool = self._relay.connections.pool(self._target.allow_private)
                self._conn = await relay_exchange.open_response(
                    self._pool,
                    self._timeouts,
                    self._target,
                    self._relay.endpoint(self._target, self._path),
                    self._content,
                    self._deadline,
                )
                if not self._conn.headers.get("content-type", "").startswith("text/event-stream"):
                    # An HTML page or a JSON body where events were asked for: nothing to relay.
                    raise UpstreamFailed("the provider answered a stream request without an event stream")
            while not self._pending and not self._eof:
                await self._read_more(self._conn)
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
        if conn.at_eof:
            self._eof = True
            self._pending.extend(self._splitter.flush())
        self.usage = self._splitter.usage

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._conn is not None and self._pool is not None:
            self._pool.release(self._conn)  # mid-body this closes the connection: the provider stops


def _encode(body: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        raise BadRequest("the request body cannot be encoded as JSON") from None


def _usage_of(data: bytes) -> Usage | None:
    """The answer's usage. A 200 whose body is not a JSON object (an HTML page from a proxy), or
    that carries a top-level `error`, is no answer: relayed, the client would take it for one."""
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise UpstreamFailed("the provider answered 200 with a body that is not JSON") from None
    if not isinstance(payload, dict):
        raise UpstreamFailed("the provider answered 200 with a body that is not a JSON object")
    if "error" in payload:
        raise UpstreamFailed("the provider answered 200 with an error in the body")
    usage = payload.get("usage")
    return Usage.from_openai(usage) if isinstance(usage, dict) else None
