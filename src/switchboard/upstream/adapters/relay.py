"""An adapter's provider carried over the relay's pooled HTTP/1.1 connections, like OpenAI's."""

from __future__ import annotations

import re
from typing import Any

from switchboard.errors import SwitchboardError
from switchboard.upstream import relay_exchange
from switchboard.upstream.adapters.base import ChatAdapter, StreamMapper
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.endpoint_cache import EndpointCache
from switchboard.upstream.endpoints import Endpoint
from switchboard.upstream.provider_stream import ProviderStream
from switchboard.upstream.types import StreamEvent, UpstreamReply, UpstreamStream, UpstreamTarget, Usage

_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class AdaptedRelay:
    def __init__(self, connections: ProviderConnections, adapter: ChatAdapter) -> None:
        self.connections = connections
        self.adapter = adapter
        self._endpoints = EndpointCache(adapter.fixed_headers)

    def endpoint(self, target: UpstreamTarget, path: str) -> Endpoint:
        adapter = self.adapter
        return self._endpoints.get(target.base_url, adapter.default_base_url, path, adapter.auth_header)

    async def chat(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        request = self.adapter.chat_request(target.model, body, stream=False)
        data = await relay_exchange.post_json(
            self.connections.pool(target.allow_private),
            self.connections.timeouts,
            target,
            self.endpoint(target, request.path),
            request.body,
            request.headers,
        )
        usage, payload = self.adapter.chat_reply(data, target.model, request.context)
        return UpstreamReply(body=payload, usage=usage)

    def chat_stream(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamStream:
        options = body.get("stream_options")
        wants_usage = bool(isinstance(options, dict) and options.get("include_usage"))
        request = self.adapter.chat_request(target.model, body, stream=True)
        source = MappedEvents(self.adapter.stream_mapper(target.model, request.context))
        endpoint = self.endpoint(target, request.path)
        return ProviderStream(
            self.connections, target, endpoint, request.body, source, wants_usage, request.headers
        )

    async def embeddings(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        raise NotImplementedError  # UpstreamClient sends embeddings elsewhere


class MappedEvents:
    """A provider's SSE body cut into events, each event's data handed to the adapter's mapper."""

    __slots__ = ("_buffer", "_mapper", "done", "failure")

    def __init__(self, mapper: StreamMapper) -> None:
        self._mapper = mapper
        self._buffer = b""
        self.done = False  # the provider's stream ends with its body; nothing is skipped after
        # A provider error event: kept until the events mapped before it have reached the client.
        self.failure: SwitchboardError | None = None

    @property
    def usage(self) -> Usage | None:
        return self._mapper.usage

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        if self.failure is not None:
            return []
        buffer = self._buffer + chunk if self._buffer else chunk
        events: list[StreamEvent] = []
        start = 0
        try:
            while (found := _BOUNDARY.search(buffer, start)) is not None:
                self._event(buffer[start : found.start()], events)
                start = found.end()
        except SwitchboardError as error:
            self.failure = error
            return events
        self._buffer = buffer[start:]
        return events

    def flush(self) -> list[StreamEvent]:
        if self.failure is not None:
            return []
        rest, self._buffer = self._buffer, b""
        events: list[StreamEvent] = []
        try:
            if rest.strip():
                self._event(rest, events)
            events.extend(self._mapper.end())
        except SwitchboardError as error:
            self.failure = error
        return events

    def _event(self, block: bytes, events: list[StreamEvent]) -> None:
        if block.startswith(b"data:") and b"\n" not in block and b"\r" not in block:
            data = block[5:]  # the common case: one `data:` line (Gemini's events)
        else:
            lines = [line[5:] for line in block.splitlines() if line.startswith(b"data:")]
            if not lines:  # comments, `event:`-only blocks, keep-alives
                return
            data = b"\n".join(lines)
        events.extend(self._mapper.event(data))
