"""The upstream seam's value types: what a call targets, what it returns, how a stream looks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, NamedTuple

from switchboard.kit.secret import Secret


@dataclass(frozen=True)
class UpstreamTarget:
    provider: str  # a kind upstream/providers.py knows: "openai", "anthropic", "gemini", "mistral", …
    model: str  # the provider's own model name
    secret: Secret
    base_url: str | None = None  # None: the provider's public endpoint
    allow_private: bool = False
    # The route's own bounds (the catalog's `routing:`, SPEC §14) where tighter than the client's
    # Timeouts; None: the client's.
    first_byte: float | None = None
    connect: float | None = None
    # Header lines every request of this attempt carries (its `traceparent` when tracing is on, SPEC §17).
    trace_headers: bytes = b""


@dataclass(frozen=True)
class Usage:
    """A provider's usage in token classes (SPEC §20): `prompt_tokens` is all input (cache reads and
    writes included), `completion_tokens` all output (reasoning included); `cache_write_1h_tokens`
    is the part of `cache_write_tokens` written for an hour."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    service_tier: str | None = None

    def to_openai(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
        }


@dataclass(frozen=True)
class UpstreamReply:
    body: bytes  # OpenAI-format JSON
    usage: Usage | None
    status: int = 200


class StreamEvent(NamedTuple):
    """A tuple rather than a dataclass: a stream builds one per event, and a tuple is the cheapest."""

    data: bytes  # one complete SSE event, `data: {...}` and its blank line
    is_usage_only: bool = False  # the `choices: []` usage chunk; drop it unless the client asked


@dataclass(frozen=True)
class Timeouts:
    connect: float
    first_byte: float  # until the response headers, and for streams until the first event
    idle: float  # longest silence between two reads after that
    # Not a time, but a bound of the same exchange: the most a non-streamed answer, or the inflated
    # bytes of a compressed one, may hold (a 200 KB gzip bomb would otherwise become 200 MB).
    max_body_bytes: int = 8 * 1024 * 1024


class UpstreamStream(ABC):
    """Async iterator of OpenAI-format SSE events, never `[DONE]` (the caller sends it).

    The provider request starts on the first `__anext__`, so errors before the first event are
    raised from there; `aclose()` cancels the provider request at any point.
    """

    usage: Usage | None = None
    client_wants_usage: bool = False  # did the caller's body ask for stream_options.include_usage
    # An event that was not JSON passed through (a byte relay does not rewrite what it relays): the
    # record says `upstream_malformed` (llm/relay.py).
    malformed: bool = False

    def __aiter__(self) -> UpstreamStream:
        return self

    @abstractmethod
    async def __anext__(self) -> StreamEvent: ...

    @abstractmethod
    async def aclose(self) -> None: ...

    def ready(self) -> list[StreamEvent]:
        """Events already received and parsed, taken without waiting for the provider.

        Lets the caller write what arrived together in one write instead of one per event.
        """
        return []
