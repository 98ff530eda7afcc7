"""A stored answer: a JSON body or a stream's events, the provider's usage, and their byte form."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from switchboard.upstream.types import StreamEvent, Usage

_LENGTH = 4  # bytes of the big-endian length of the metadata that opens an encoded answer


class CorruptEntry(Exception):
    """An entry's bytes do not decode (written by another version): treated as a miss."""


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """`body` for a JSON answer; for a stream, `events` (each flagged usage-only, the chunk a chat
    client gets only with `include_usage`) and `end` (its last event: `[DONE]` or the surface's)."""

    usage: Usage
    body: bytes = b""
    events: tuple[StreamEvent, ...] = ()
    end: bytes = b""
    stream: bool = False

    def replayed(self, wants_usage: bool) -> bytes:
        """The stream as this client gets it: the usage chunk only when it asked (chat)."""
        parts = [e.data for e in self.events if wants_usage or not e.is_usage_only]
        parts.append(self.end)
        return b"".join(parts)


def encode(answer: CachedAnswer) -> bytes:
    """Metadata (JSON) then the raw bytes of the body or the events and end, as they were sent."""
    usage = answer.usage
    meta = {
        "s": answer.stream,
        "u": [
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens,
            usage.reasoning_tokens,
            usage.cache_write_tokens,
            usage.cache_write_1h_tokens,
            usage.service_tier,
        ],
        "e": [[len(e.data), e.is_usage_only] for e in answer.events],
    }
    raw = orjson.dumps(meta)
    payload = b"".join(e.data for e in answer.events) + answer.end if answer.stream else answer.body
    return len(raw).to_bytes(_LENGTH, "big") + raw + payload


def decode(data: bytes) -> CachedAnswer:
    try:
        size = int.from_bytes(data[:_LENGTH], "big")
        meta = orjson.loads(data[_LENGTH : _LENGTH + size])
        rest = memoryview(data)[_LENGTH + size :]
        u = meta["u"]
        usage = Usage(u[0], u[1], u[2], u[3], u[4], u[5], u[6])
        if not meta["s"]:
            return CachedAnswer(usage=usage, body=bytes(rest))
        events, at = [], 0
        for length, usage_only in meta["e"]:
            events.append(StreamEvent(bytes(rest[at : at + length]), bool(usage_only)))
            at += length
        return CachedAnswer(usage=usage, events=tuple(events), end=bytes(rest[at:]), stream=True)
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise CorruptEntry(str(exc)) from None
