"""OpenAI's chat completions, embeddings and models wire format, as the fake provider speaks it."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Iterator
from typing import Any

import orjson

from switchboard.upstream.prices import litellm_max_output
from tests.fakes.script import CREATED, Script

FINGERPRINT = "fp_fake"


def sse(payload: Any) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def usage(script: Script) -> dict[str, Any]:
    return {
        "prompt_tokens": script.prompt_tokens,
        "completion_tokens": script.completion_tokens,
        "total_tokens": script.prompt_tokens + script.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": script.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": script.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def tier(script: Script) -> dict[str, Any]:
    """OpenAI names the tier that served the call at the top of the answer and of every chunk."""
    return {"service_tier": script.service_tier} if script.service_tier is not None else {}


def first_tool_name(body: dict[str, Any]) -> str | None:
    tools = body.get("tools") or []
    if not tools:
        return None
    function = tools[0].get("function") or {}
    return str(function.get("name") or "tool")


def chat_body(script: Script, body: dict[str, Any], call_id: str) -> dict[str, Any]:
    tool = first_tool_name(body)
    message: dict[str, Any] = {"role": "assistant", "content": script.reply, "refusal": None}
    finish = "stop"
    if tool is not None:
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": "call_fake_1",
                "type": "function",
                "function": {"name": tool, "arguments": script.tool_arguments},
            }
        ]
        finish = "tool_calls"
    return {
        "id": call_id,
        "object": "chat.completion",
        "created": CREATED,
        "model": body.get("model"),
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": usage(script),
        **tier(script),
    }


def chat_events(script: Script, body: dict[str, Any], call_id: str) -> Iterator[bytes]:
    """The stream as OpenAI sends it: `usage: null` on every chunk and a usage-only last chunk
    when `stream_options.include_usage` is true; then `[DONE]`."""
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    base = {
        "id": call_id,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": body.get("model"),
        "system_fingerprint": FINGERPRINT,
        **tier(script),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        payload: dict[str, Any] = {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            payload["usage"] = None
        return sse(payload)

    tool = first_tool_name(body)
    if tool is None:
        yield chunk({"role": "assistant", "content": "", "refusal": None})
        for piece in script.pieces():
            yield chunk({"content": piece})
        yield chunk({}, "stop")
    else:
        yield chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_fake_1",
                        "type": "function",
                        "function": {"name": tool, "arguments": ""},
                    }
                ],
            }
        )
        args = script.tool_arguments
        for start in range(0, len(args), 8):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[start : start + 8]}}]})
        yield chunk({}, "tool_calls")
    if include_usage:
        yield sse({**base, "choices": [], "usage": usage(script)})
    yield b"data: [DONE]\n\n"


def completion_body(script: Script, body: dict[str, Any], call_id: str) -> dict[str, Any]:
    """The legacy text completion (`POST /v1/completions`)."""
    return {
        "id": call_id,
        "object": "text_completion",
        "created": CREATED,
        "model": body.get("model"),
        "system_fingerprint": FINGERPRINT,
        "choices": [{"text": script.reply, "index": 0, "logprobs": None, "finish_reason": "stop"}],
        "usage": usage(script),
    }


def completion_events(script: Script, body: dict[str, Any], call_id: str) -> Iterator[bytes]:
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    base = {"id": call_id, "object": "text_completion", "created": CREATED, "model": body.get("model")}
    pieces = list(script.pieces())
    for index, piece in enumerate(pieces):
        finish = "stop" if index == len(pieces) - 1 else None
        payload: dict[str, Any] = {
            **base,
            "choices": [{"text": piece, "index": 0, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            payload["usage"] = None
        yield sse(payload)
    if include_usage:
        yield sse({**base, "choices": [], "usage": usage(script)})
    yield b"data: [DONE]\n\n"


def vector(text: str, dims: int) -> list[float]:
    """A deterministic unit-ish vector per input text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [round((digest[i % len(digest)] - 128) / 128, 4) for i in range(dims)]


def embeddings_body(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else [str(item) for item in inputs or []]
    as_base64 = body.get("encoding_format") == "base64"  # the openai SDK's default
    data = []
    for index, text in enumerate(texts):
        values = vector(text, script.embedding_dims)
        encoded: Any = values
        if as_base64:
            encoded = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": body.get("model"),
        "usage": {"prompt_tokens": script.prompt_tokens, "total_tokens": script.prompt_tokens},
    }


def models_body(models: list[str]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"id": model, "object": "model", "created": CREATED, "owned_by": "fake-provider"}
            for model in models
        ],
    }


def error(script: Script, api_key: str | None) -> tuple[int, dict[str, Any]]:
    kinds = {
        "rate_limit": (429, "rate_limit_exceeded", "requests", "Rate limit reached for requests."),
        "invalid_key": (401, "invalid_api_key", "invalid_request_error", "Incorrect API key provided."),
        "unauthorized": (401, "invalid_api_key", "invalid_request_error", "Incorrect API key provided."),
        "forbidden": (403, "unsupported_country_region_territory", "request_forbidden", "Forbidden."),
        "server_error": (500, None, "server_error", "The server had an error while processing your request."),
        "bad_request": (400, None, "invalid_request_error", "Invalid value for 'temperature'."),
        "echo_key": (
            400,
            "invalid_value",
            "invalid_request_error",
            f"Request rejected: key {api_key} is not allowed to use this model.",
        ),
    }
    status, code, type_, message = kinds[script.fail or "server_error"]
    return script.status or status, {
        "error": {"message": script.message or message, "type": type_, "param": None, "code": code}
    }


def cap_refusal(body: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's 400 for a chat cap above what the model can answer (its largest answer as litellm's
    map knows it; a model the map does not know takes any cap)."""
    model = body.get("model")
    largest = litellm_max_output("openai", model) if isinstance(model, str) else None
    for name in ("max_completion_tokens", "max_tokens"):
        asked = body.get(name)
        if largest is not None and isinstance(asked, int) and asked > largest:
            message = (
                f"{name} is too large: {asked}. This model supports at most {largest} completion tokens, "
                f"whereas you provided {asked}."
            )
            return {"error": {"message": message, "type": "invalid_request_error", "param": name,
                              "code": "invalid_value"}}  # fmt: skip
    return None


def stream_error(message: str, type_: str = "server_error", code: str | int | None = None) -> bytes:
    """The error chunk OpenAI sends inside a 200 stream when it fails after the first chunks (its
    spacing: Python's json.dumps, not orjson's compact form), e.g. on overload."""
    payload = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def openrouter_stream_error(call_id: str, model: str, code: int, message: str) -> bytes:
    """OpenRouter's mid-stream failure (its documented shape): an ordinary chunk, HTTP 200 already
    sent, with a top-level `error` whose `code` is an HTTP status, and `"finish_reason":"error"`."""
    payload = {
        "id": call_id,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "provider": "OpenAI",
        "error": {"code": code, "message": message},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    }
    return sse(payload)
