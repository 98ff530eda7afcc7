"""litellm's response objects rewritten in OpenAI's wire format: JSON bodies and SSE chunks."""

from __future__ import annotations

import base64
import struct
from typing import Any

import orjson

from switchboard.upstream.types import StreamEvent, Usage
from switchboard.upstream.usage_openai import openai_usage
from switchboard.wire.sse import frame

# What an OpenAI message or delta carries; litellm's extras (provider_specific_fields,
# thinking_blocks, vertex_ai_* metadata, …) stay behind.
_MESSAGE_KEYS = (
    "role",
    "content",
    "tool_calls",
    "function_call",
    "refusal",
    "reasoning_content",
    "annotations",
    "audio",
)


def _message(raw: dict[str, Any], *, complete: bool) -> dict[str, Any]:
    out = {key: raw[key] for key in _MESSAGE_KEYS if raw.get(key) is not None}
    if complete:  # a full message always names its role and content, null or not
        out.setdefault("role", "assistant")
        out.setdefault("content", None)
    return out


def _usage(raw: object, service_tier: object = None) -> Usage | None:
    return openai_usage(raw, service_tier) if isinstance(raw, dict) else None


def completion_body(result: Any) -> tuple[Usage | None, bytes]:
    dump = result.model_dump()
    usage = _usage(dump.get("usage"), dump.get("service_tier"))
    body: dict[str, Any] = {
        "id": dump.get("id"),
        "object": "chat.completion",
        "created": dump.get("created"),
        "model": dump.get("model"),
        "system_fingerprint": dump.get("system_fingerprint"),
        "choices": [
            {
                "index": choice.get("index", index),
                "message": _message(choice.get("message") or {}, complete=True),
                "logprobs": choice.get("logprobs"),
                "finish_reason": choice.get("finish_reason"),
            }
            for index, choice in enumerate(dump.get("choices") or [])
        ],
    }
    if usage is not None:
        body["usage"] = usage.to_openai()
    return usage, orjson.dumps(body)


def chunk_events(chunk: Any, stream_id: str | None = None) -> tuple[Usage | None, list[StreamEvent]]:
    """One litellm stream chunk as OpenAI chunks: content first, then a `choices: []` usage chunk
    when it carries usage (litellm puts usage on a chunk with an empty delta; OpenAI does not).

    `stream_id` is the id every chunk of the stream carries, as OpenAI's do (litellm's Gemini
    stream makes up a new one per chunk); None takes the chunk's own.
    """
    dump = chunk.model_dump(exclude_none=True)
    base: dict[str, Any] = {
        "id": stream_id or dump.get("id"),
        "object": "chat.completion.chunk",
        "created": dump.get("created"),
        "model": dump.get("model"),
    }
    if dump.get("system_fingerprint"):
        base["system_fingerprint"] = dump["system_fingerprint"]
    choices = [
        {
            "index": choice.get("index", index),
            "delta": _message(choice.get("delta") or {}, complete=False),
            "logprobs": choice.get("logprobs"),
            "finish_reason": choice.get("finish_reason"),
        }
        for index, choice in enumerate(dump.get("choices") or [])
    ]
    live = [choice for choice in choices if choice["delta"] or choice["finish_reason"]]
    events = [StreamEvent(frame({**base, "choices": live}))] if live else []
    usage = _usage(dump.get("usage"), dump.get("service_tier"))
    if usage is not None:
        events.append(
            StreamEvent(frame({**base, "choices": [], "usage": usage.to_openai()}), is_usage_only=True)
        )
    return usage, events


def pack_base64(values: list[float]) -> str:
    """OpenAI's `encoding_format: base64`: little-endian float32s."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
