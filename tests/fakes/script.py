"""What the fake provider is told to do (scripts) and what it saw (records)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

DEFAULT_REPLY = "Hello from the fake provider."
CREATED = 1_700_000_000  # fixed so that bodies are byte-for-byte reproducible

Failure = Literal[
    "rate_limit",  # 429 with Retry-After
    "invalid_key",  # the provider's own invalid-key answer (Gemini: 400 API_KEY_INVALID)
    "unauthorized",  # a plain 401
    "forbidden",  # 403
    "server_error",  # 500 (or `status`)
    "bad_request",  # 400 with `message`
    "echo_key",  # 400 whose message contains the API key that was sent
]
Kind = Literal["openai", "anthropic", "gemini"]


@dataclass
class Script:
    """One call's behaviour. Defaults answer DEFAULT_REPLY with 11 prompt and 7 completion tokens."""

    reply: str = DEFAULT_REPLY
    prompt_tokens: int = 11
    # Bill the prompt as a real tokenizer would (`billed_prompt_tokens`) instead of `prompt_tokens`.
    count_prompt: bool = False
    completion_tokens: int = 7
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    # Anthropic: prompt tokens written to the cache (of them, `cache_write_1h_tokens` for an hour).
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    service_tier: str | None = None  # named in the answer (OpenAI: top level; Anthropic: in usage)
    tool_arguments: str = '{"location": "Paris"}'
    embedding_dims: int = 8
    fail: Failure | None = None
    status: int | None = None  # overrides the failure's usual status
    message: str | None = None  # overrides the failure's usual message
    retry_after: str | None = "7"
    first_byte_delay: float = 0.0  # seconds before the response headers
    chunk_delay: float = 0.0  # seconds before each stream event after the first
    stall_after: int | None = None  # stream events sent before going silent (until disconnect)
    break_after: int | None = None  # stream events (or body halves) sent before the connection drops
    endless: bool = False  # keep streaming content until the client goes away
    response_ids: bool = True  # Gemini: name the responseId (some API versions send none)
    held: bool = False  # answer only once the test calls FakeProvider.release(model)
    # The provider's answer given whole, in its own wire format, instead of one built from the fields
    # above: a JSON body for a non-streamed call, or the stream's events (each `event:`/`data:` block
    # with its blank line) for a streamed one. For exchanges the builders do not cover.
    answer: Any = None
    answer_events: list[bytes] | None = None

    def pieces(self) -> Iterator[str]:
        """The reply cut into stream pieces (words with their trailing space)."""
        words = re.findall(r"\S+\s*", self.reply) or [self.reply]
        if not self.endless:
            yield from words
            return
        for _ in range(1_000_000):
            yield from words


def billed_prompt_tokens(body: Any) -> int:
    """A prompt's tokens as real tokenizers bill them: a token a character outside ASCII (Chinese and
    Japanese text cost about that), four ASCII characters a token, and three a message for framing."""
    texts: list[str] = []
    _strings(body.get("messages") if isinstance(body, dict) else None, texts)
    _strings(body.get("input") if isinstance(body, dict) else None, texts)
    _strings(body.get("system") if isinstance(body, dict) else None, texts)
    ascii_chars = sum(len(t) for t in texts if t.isascii())
    other = [t for t in texts if not t.isascii()]
    ascii_chars += sum(1 for t in other for c in t if c.isascii())
    wide = sum(1 for t in other for c in t if not c.isascii())
    messages = body.get("messages") if isinstance(body, dict) else None
    framing = 3 * len(messages) if isinstance(messages, list) else 0
    return wide + -(-ascii_chars // 4) + framing


def _strings(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, list):
        for item in value:
            _strings(item, into)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, into)


@dataclass
class Received:
    """One request as the fake provider saw it."""

    kind: Kind
    method: str
    path: str
    query: str
    headers: dict[str, str]
    api_key: str | None
    body: Any
    model: str | None
    at: float  # time.monotonic() on arrival
    stream: bool = False
    sent: list[bytes] = field(default_factory=list)  # stream events (or the JSON body) exactly as written
    status: int = 200
    finished_at: float | None = None


@dataclass(frozen=True)
class Disconnect:
    """The client went away (or the call was cancelled) before the response was complete."""

    model: str | None
    path: str
    at: float  # time.monotonic() when noticed
    events_sent: int
