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
