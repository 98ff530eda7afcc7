"""What every provider adapter offers the relay (`relay.py`): request, answer and stream codecs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NamedTuple, Protocol

from switchboard.upstream.types import StreamEvent, Usage


class ProviderRequest(NamedTuple):
    path: str  # appended to the credential's base_url (or the adapter's default_base_url)
    body: bytes  # the provider's request body, encoded
    headers: bytes = b""  # per-call header lines beyond the adapter's fixed ones, each ending "\r\n"
    # What the answer's codecs must know of the request (Anthropic: JSON mode, renamed tools);
    # opaque to the relay, which hands it to chat_reply / stream_mapper.
    context: Any = None


class StreamMapper(ABC):
    """One provider stream turned into OpenAI chat chunks, event by event.

    Every chunk of the stream carries the same `id`, `created` and `model`. Content chunks come first;
    the usage arrives as one `choices: []` chunk flagged `is_usage_only`, after the chunk with the
    `finish_reason`. A provider `error` event is raised as the gateway's error (provider_errors).
    """

    usage: Usage | None = None

    @abstractmethod
    def event(self, data: bytes) -> list[StreamEvent]:
        """One provider SSE event's `data` (JSON bytes, the `data:` lines joined) → OpenAI events."""

    def end(self) -> list[StreamEvent]:
        """The provider's stream ended: whatever is still owed (e.g. the usage chunk)."""
        return []


class ChatAdapter(Protocol):
    kind: str  # the provider kind a credential names: "anthropic", "gemini"
    default_base_url: str  # the provider's public endpoint, without a trailing slash
    auth_header: str  # the header that carries the key, e.g. "x-api-key"
    fixed_headers: bytes  # header lines every request carries, e.g. b"anthropic-version: …\r\n"

    def chat_request(self, model: str, body: dict[str, Any], *, stream: bool) -> ProviderRequest:
        """An OpenAI chat body (the client's, `model` already resolved to the provider's bare name)
        as the provider's request. Raises BadRequest for what the provider cannot be asked."""
        ...

    def chat_reply(self, data: bytes, model: str, context: Any = None) -> tuple[Usage | None, bytes]:
        """The provider's JSON answer as OpenAI chat.completion JSON, and its usage. Raises
        UpstreamFailed for a 200 that is not an answer."""
        ...

    def stream_mapper(self, model: str, context: Any = None) -> StreamMapper:
        """`context`: the ProviderRequest's, for what the answer's mapping must know of the request."""
        ...
