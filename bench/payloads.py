"""The fixed request bodies and the fixed upstream answers, in OpenAI's wire format."""

from __future__ import annotations

import json

MODEL = "openai/gpt-4o-mini"
UPSTREAM_MODEL = "gpt-4o-mini"
STREAM_EVENTS = 22  # role chunk, 19 content chunks, finish chunk, usage chunk; then `data: [DONE]`
PROMPT_TOKENS = 24
COMPLETION_TOKENS = 19

_MESSAGES = [
    {"role": "system", "content": "You are a terse assistant used by a benchmark."},
    {"role": "user", "content": "Count from one to nineteen in words, one word per token."},
]
_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]


def request_body(model: str, stream: bool) -> bytes:
    body: dict[str, object] = {"model": model, "messages": _MESSAGES, "max_tokens": 64, "temperature": 0}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body, separators=(",", ":")).encode()


def _usage() -> dict[str, object]:
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def completion_json() -> str:
    body = {
        "id": "chatcmpl-bench0001",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": UPSTREAM_MODEL,
        "system_fingerprint": "fp_bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": " ".join(_WORDS), "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(),
    }
    return json.dumps(body, separators=(",", ":"))


def _chunk(delta: dict[str, object], finish: str | None) -> dict[str, object]:
    return {
        "id": "chatcmpl-bench0001",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": UPSTREAM_MODEL,
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        # What OpenAI sends on every chunk but the last once `include_usage` is asked for (always, here).
        "usage": None,
    }


def stream_events() -> list[str]:
    """The SSE body as a list of `data: …` lines (each followed by a blank line on the wire)."""
    chunks = [_chunk({"role": "assistant", "content": ""}, None)]
    chunks += [_chunk({"content": (" " if i else "") + word}, None) for i, word in enumerate(_WORDS)]
    chunks.append(_chunk({}, "stop"))
    usage = _chunk({}, None)
    usage["choices"] = []
    usage["usage"] = _usage()
    chunks.append(usage)
    assert len(chunks) == STREAM_EVENTS
    lines = ["data: " + json.dumps(c, separators=(",", ":")) for c in chunks]
    return [*lines, "data: [DONE]"]


# The same answer in the other providers' wire formats, for the adapters' rows (--providers).
ANTHROPIC_MODEL = "claude-3-5-haiku-latest"
GEMINI_MODEL = "gemini-2.0-flash"
SELECTORS = {
    "openai": MODEL,
    "anthropic": f"anthropic/{ANTHROPIC_MODEL}",
    "gemini": f"gemini/{GEMINI_MODEL}",
}


def _compact(payload: object) -> str:
    return json.dumps(payload, separators=(",", ":"))


def _anthropic_usage(output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": PROMPT_TOKENS,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def anthropic_json() -> str:
    return _compact(
        {
            "id": "msg_bench0001",
            "type": "message",
            "role": "assistant",
            "model": ANTHROPIC_MODEL,
            "content": [{"type": "text", "text": " ".join(_WORDS)}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": _anthropic_usage(COMPLETION_TOKENS),
        }
    )


def anthropic_events() -> list[str]:
    """Anthropic's stream as `event:`/`data:` blocks (each followed by a blank line on the wire)."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_bench0001",
            "type": "message",
            "role": "assistant",
            "model": ANTHROPIC_MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _anthropic_usage(1),
        },
    }
    events: list[dict[str, object]] = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
    ]
    events += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": (" " if i else "") + w},
        }
        for i, w in enumerate(_WORDS)
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": COMPLETION_TOKENS},
        },
        {"type": "message_stop"},
    ]
    return [f"event: {e['type']}\ndata: {_compact(e)}" for e in events]


def _gemini_body(text: str, finish: str | None, usage: bool) -> dict[str, object]:
    candidate: dict[str, object] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, object] = {
        "candidates": [candidate],
        "modelVersion": GEMINI_MODEL,
        "responseId": "bench0001",
    }
    if usage:
        body["usageMetadata"] = {
            "promptTokenCount": PROMPT_TOKENS,
            "candidatesTokenCount": COMPLETION_TOKENS,
            "totalTokenCount": PROMPT_TOKENS + COMPLETION_TOKENS,
        }
    return body


def gemini_json() -> str:
    return _compact(_gemini_body(" ".join(_WORDS), "STOP", True))


def gemini_events() -> list[str]:
    """Gemini's `alt=sse` stream: one `data:` line per chunk, usage on the last."""
    last = len(_WORDS) - 1
    return [
        "data: " + _compact(_gemini_body((" " if i else "") + w, "STOP" if i == last else None, i == last))
        for i, w in enumerate(_WORDS)
    ]
