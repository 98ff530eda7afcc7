"""The OpenAI-format relay: the body passed through, response bytes forwarded as they arrive."""

from __future__ import annotations

from typing import Any

import orjson

from switchboard.errors import BadRequest, UpstreamFailed
from switchboard.upstream import relay_exchange
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.endpoint_cache import EndpointCache
from switchboard.upstream.endpoints import Endpoint
from switchboard.upstream.provider_stream import ProviderStream
from switchboard.upstream.sse import EventSplitter
from switchboard.upstream.types import UpstreamReply, UpstreamStream, UpstreamTarget, Usage
from switchboard.upstream.usage_openai import openai_usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIRelay:
    def __init__(self, connections: ProviderConnections) -> None:
        self.connections = connections
        self._endpoints = EndpointCache()

    def endpoint(self, target: UpstreamTarget, path: str) -> Endpoint:
        return self._endpoints.get(target.base_url, DEFAULT_BASE_URL, path)

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
        endpoint = self.endpoint(target, path)
        return ProviderStream(self.connections, target, endpoint, content, EventSplitter(), wants_usage)


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
    return openai_usage(usage, payload.get("service_tier")) if isinstance(usage, dict) else None
