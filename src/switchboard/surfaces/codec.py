"""The protocol every surface (an inbound API format) meets, so that the pipeline never names one.

A codec decodes the client's request, says whether a provider kind is asked in the surface's own
format (relayed byte for byte) or over chat completions, and encodes a chat answer or stream back
into the surface's format. `surfaces/registry.py` lists the codecs with their routes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, ClassVar

from starlette.datastructures import Headers

from switchboard.errors import BadRequest
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import UpstreamReply, UpstreamStream, UpstreamTarget


@dataclass(frozen=True, slots=True)
class Decoded:
    """What a request says the pipeline must know before preparing the call."""

    stream: bool
    wants_usage: bool = False  # the client asked for the stream's usage chunk (OpenAI's include_usage)
    provider_headers: bytes = b""  # header lines relayed to a provider that speaks the surface


_PLAIN = {(stream, usage): Decoded(stream, usage) for stream in (False, True) for usage in (False, True)}


def decoded(stream: bool, wants_usage: bool = False) -> Decoded:
    """A request's decoding without header lines: one of four shared objects, none made per call."""
    return _PLAIN[stream, wants_usage]


class Codec(ABC):
    """One surface. `name` is what a call's estimate is read as; `endpoint` what its record says."""

    name: ClassVar[str]
    endpoint: ClassVar[str]
    # Whether the chat request needs the model's largest answer (Anthropic requires `max_tokens`).
    caps_output: ClassVar[bool] = False

    @abstractmethod
    def decode(self, body: dict[str, Any], headers: Headers) -> Decoded:
        """Checks what the gateway relies on; raises BadRequest for what it cannot carry."""

    def for_agent(self, body: dict[str, Any]) -> dict[str, Any]:
        """An `agent:` selector's body (agents/apply.py writes it as chat) back in the surface's shape."""
        return body

    @abstractmethod
    def speaks(self, provider: str) -> bool:
        """Whether `provider` is asked in this surface's own format; otherwise it is asked over chat."""

    @abstractmethod
    def relay(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> Awaitable[UpstreamReply]:
        """The request as it came, to a provider that speaks the surface (the upstream's own
        coroutine, returned rather than awaited here: no frame of its own on the hot path)."""

    def relay_stream(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> UpstreamStream:
        """The streamed request as it came, to a provider that speaks the surface."""
        raise BadRequest(f"/v1/{self.name} is not streamed", param="stream")

    def to_chat(self, body: dict[str, Any], max_output: int | None) -> dict[str, Any]:
        """The chat request standing in for this one; raises BadRequest for what chat cannot carry."""
        raise BadRequest(f"/v1/{self.name} has no translation over chat")

    def answer(self, chat: UpstreamReply, body: dict[str, Any]) -> UpstreamReply:
        """A chat answer in the surface's format."""
        return chat

    def stream(self, chat: UpstreamStream, body: dict[str, Any]) -> UpstreamStream:
        """A chat stream's events in the surface's format."""
        return chat
