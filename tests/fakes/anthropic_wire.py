"""Anthropic's Messages wire format (non-stream and the real stream event sequence)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from tests.fakes.script import Script


def event(name: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def _tool_name(body: dict[str, Any]) -> str | None:
    tools = body.get("tools") or []
    return str(tools[0].get("name") or "tool") if tools else None


def _usage(script: Script, output_tokens: int) -> dict[str, Any]:
    # Anthropic's input_tokens excludes cache reads; clients add them back to get the prompt total.
    return {
        "input_tokens": script.prompt_tokens - script.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": script.cached_tokens,
        "output_tokens": output_tokens,
    }


def message_body(script: Script, body: dict[str, Any], message_id: str) -> dict[str, Any]:
    tool = _tool_name(body)
    content: list[dict[str, Any]]
    if tool is None:
        content, stop = [{"type": "text", "text": script.reply}], "end_turn"
    else:
        content = [
            {
                "type": "tool_use",
                "id": "toolu_fake_1",
                "name": tool,
                "input": orjson.loads(script.tool_arguments),
            }
        ]
        stop = "tool_use"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(script, script.completion_tokens),
    }


def message_events(script: Script, body: dict[str, Any], message_id: str) -> Iterator[bytes]:
    """message_start, content_block_start, ping, content_block_delta…, content_block_stop,
    message_delta (with the output tokens), message_stop."""
    tool = _tool_name(body)
    yield event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _usage(script, 1),
            },
        },
    )
    if tool is None:
        block: dict[str, Any] = {"type": "text", "text": ""}
        deltas = ({"type": "text_delta", "text": piece} for piece in script.pieces())
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": "toolu_fake_1", "name": tool, "input": {}}
        args = script.tool_arguments
        deltas = (
            {"type": "input_json_delta", "partial_json": args[i : i + 8]} for i in range(0, len(args), 8)
        )
        stop = "tool_use"
    yield event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
    yield event("ping", {"type": "ping"})
    for delta in deltas:
        yield event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
    yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": script.completion_tokens},
        },
    )
    yield event("message_stop", {"type": "message_stop"})


def error(script: Script, api_key: str | None) -> tuple[int, dict[str, Any]]:
    kinds = {
        "rate_limit": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit."),
        "invalid_key": (401, "authentication_error", "invalid x-api-key"),
        "unauthorized": (401, "authentication_error", "invalid x-api-key"),
        "forbidden": (403, "permission_error", "Your API key does not have permission to use this resource."),
        "server_error": (500, "api_error", "Internal server error"),
        "bad_request": (400, "invalid_request_error", "max_tokens: Field required"),
        "echo_key": (400, "invalid_request_error", f"x-api-key {api_key} cannot be used for this model"),
    }
    status, type_, message = kinds[script.fail or "server_error"]
    return script.status or status, {
        "type": "error",
        "error": {"type": type_, "message": script.message or message},
    }
