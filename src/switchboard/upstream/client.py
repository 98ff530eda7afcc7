"""UpstreamClient: the one object the /v1 routes call to reach a provider, whatever its kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from switchboard.errors import BadRequest
from switchboard.observability import events
from switchboard.upstream import choices_watch, providers
from switchboard.upstream.adapters.anthropic import AnthropicAdapter
from switchboard.upstream.adapters.gemini import GeminiAdapter
from switchboard.upstream.adapters.relay import AdaptedRelay
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.egress import Egress
from switchboard.upstream.native import NativeRelay
from switchboard.upstream.openai_relay import OpenAIRelay
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.proxy import EgressProxy
from switchboard.upstream.types import Timeouts, UpstreamReply, UpstreamStream, UpstreamTarget


class ClientSettings(Protocol):
    """What the client reads of the gateway's settings (settings.Settings satisfies it): upstream is
    below configuration, which validates provider kinds, proxies and base URLs against it."""

    @property
    def upstream_connect_timeout(self) -> float: ...

    @property
    def upstream_first_byte_timeout(self) -> float: ...

    @property
    def upstream_idle_timeout(self) -> float: ...

    @property
    def max_upstream_response_bytes(self) -> int: ...

    @property
    def egress_proxy(self) -> EgressProxy | None: ...

    @property
    def ca_bundle(self) -> Path | None: ...

    @property
    def allow_private_upstreams(self) -> bool: ...


class Relay(Protocol):
    async def chat(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply: ...

    def chat_stream(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamStream: ...

    async def embeddings(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply: ...


class UpstreamClient:
    """`openai` goes through the byte relay on its own HTTP/1.1 connection pool; `anthropic` and
    `gemini` through the gateway's own adapters (upstream/adapters/) on the same pool; every other
    kind through litellm on an httpx pool (litellm takes only an httpx client). litellm and the
    httpx pool are built on the first such call, never for the native kinds' chat traffic."""

    def __init__(self, timeouts: Timeouts, egress: Egress | None = None) -> None:
        self.connections = ProviderConnections(timeouts, egress=egress)
        self.pool = ClientPool(timeouts, egress)
        self._openai = OpenAIRelay(self.connections)
        # Surfaces relayed to a provider that speaks them (Anthropic Messages, OpenAI Responses).
        self.native = NativeRelay(self.connections)
        self._adapted: dict[str, Relay] = {
            "anthropic": AdaptedRelay(self.connections, AnthropicAdapter()),
            "gemini": AdaptedRelay(self.connections, GeminiAdapter()),
        }
        self._translated: Relay | None = None

    @classmethod
    def from_settings(cls, settings: ClientSettings) -> UpstreamClient:
        client = cls(
            Timeouts(
                connect=settings.upstream_connect_timeout,
                first_byte=settings.upstream_first_byte_timeout,
                idle=settings.upstream_idle_timeout,
                max_body_bytes=settings.max_upstream_response_bytes,
            ),
            Egress(proxy=settings.egress_proxy, ca_bundle=settings.ca_bundle),
        )
        # The pool every OpenAI-format call of this deployment uses, its TLS set up before any call.
        client.connections.pool(settings.allow_private_upstreams).ssl_context()
        return client

    def _relay(self, target: UpstreamTarget) -> Relay:
        if target.provider == "openai":
            return self._openai
        adapted = self._adapted.get(target.provider)
        if adapted is not None:
            return adapted
        return self._translated_relay(target)

    def _translated_relay(self, target: UpstreamTarget) -> Relay:
        """Every other provider litellm knows (SPEC §15), and Gemini's embeddings."""
        if not providers.is_known(target.provider):
            raise BadRequest(f"unknown provider kind {target.provider!r}")
        if self._translated is None:
            from switchboard.upstream.translated import TranslatedRelay

            self._translated = TranslatedRelay(self.pool)
        return self._translated

    # Every kind's answer is OpenAI-format here: tracing reads its finish reasons in one place.
    async def chat(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        """A non-streamed chat completion as OpenAI-format JSON bytes."""
        reply = await self._relay(target).chat(target, body)
        events.choices_answered(reply.body)
        return reply

    def chat_stream(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamStream:
        """A streamed chat completion; the provider is called on the first `__anext__`."""
        return choices_watch.watched(self._relay(target).chat_stream(target, body))

    async def embeddings(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        if target.provider == "openai":
            return await self._openai.embeddings(target, body)
        return await self._translated_relay(target).embeddings(target, body)

    async def completions(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamReply:
        """A legacy text completion, relayed: only OpenAI-format providers offer the endpoint."""
        reply = await self._openai_only(target).completions(target, body)
        events.choices_answered(reply.body)
        return reply

    def completions_stream(self, target: UpstreamTarget, body: dict[str, Any]) -> UpstreamStream:
        return choices_watch.watched(self._openai_only(target).chat_stream(target, body, "/completions"))

    def _openai_only(self, target: UpstreamTarget) -> OpenAIRelay:
        if target.provider != "openai":
            raise BadRequest(f"{target.provider} models have no text-completion endpoint", param="model")
        return self._openai

    async def aclose(self) -> None:
        await self.connections.aclose()
        await self.pool.aclose()
