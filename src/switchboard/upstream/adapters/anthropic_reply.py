"""Anthropic's Messages answer as an OpenAI chat.completion, as litellm 1.106.0 writes it.

Text blocks join into `content`; `tool_use` blocks become `tool_calls` with Anthropic's `toolu_…`
ids and their input as a JSON string; thinking becomes `reasoning_content`. In JSON mode the forced
`json_tool_call`'s input is the answer: it becomes the content and the finish_reason `stop`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import orjson

from switchboard.errors import UpstreamFailed
from switchboard.upstream import provider_errors
from switchboard.upstream.adapters.anthropic_request import JSON_TOOL, UNKNOWN_CONTEXT, ReplyContext
from switchboard.upstream.adapters.anthropic_usage import usage as usage_of
from switchboard.upstream.types import Usage
from switchboard.wire.anthropic import finish_reason


def reply(data: bytes, model: str, context: ReplyContext | None) -> tuple[Usage | None, bytes]:
    answer = _answer(data)
    context = context or UNKNOWN_CONTEXT
    text = ""
    thinking: str | None = None
    calls: list[dict[str, Any]] = []
    for block in answer["content"]:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text += block.get("text") or ""
        elif kind in ("tool_use", "server_tool_use"):
            name = block.get("name")
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    # json.dumps, as litellm writes arguments (the same JSON either way).
                    "function": {
                        "name": context.tool_names.get(name, name),
                        "arguments": json.dumps(block.get("input")),
                    },
                }
            )
        elif kind in ("thinking", "redacted_thinking"):
            thinking = (thinking or "") + (block.get("thinking") or "" if kind == "thinking" else "")
    reason = finish_reason(answer.get("stop_reason"))
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    json_calls = (
        [call for call in calls if call["function"]["name"] == JSON_TOOL] if context.json_mode else []
    )
    if json_calls and len(json_calls) == len(calls):
        message = {"role": "assistant", "content": _json_content(json_calls[0]["function"]["arguments"])}
        reason = "stop"
    else:
        if json_calls:  # the JSON answer beside real tool calls: appended to the text
            message["content"] = text + _json_content(json_calls[0]["function"]["arguments"])
            calls = [call for call in calls if call["function"]["name"] != JSON_TOOL]
        if calls:
            message["tool_calls"] = calls
        if thinking is not None:
            message["reasoning_content"] = thinking
    raw_usage = answer.get("usage")
    usage = usage_of(raw_usage if isinstance(raw_usage, dict) else {}, thinking)
    body = {
        "id": answer.get("id"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": answer.get("model") or model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reason}],
        "usage": usage.to_openai(),
    }
    return usage, orjson.dumps(body)


def _answer(data: bytes) -> Mapping[str, Any]:
    """The Messages object, or UpstreamFailed for a 200 that is not one (an HTML page, an error)."""
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise UpstreamFailed("the provider answered 200 with a body that is not JSON") from None
    if not isinstance(answer, dict):
        raise UpstreamFailed("the provider answered 200 with a body that is not a JSON object")
    if "error" in answer or answer.get("type") == "error":
        message = provider_errors.scrub(provider_errors.provider_message(data))
        raise UpstreamFailed(f"the provider answered 200 with an error: {message}")
    if not isinstance(answer.get("content"), list):
        raise UpstreamFailed("the provider answered 200 without a message")
    return answer


def _json_content(arguments: str) -> str:
    """The JSON tool's input as content (its `values` member when it has one, as litellm takes it)."""
    value = json.loads(arguments)
    if isinstance(value, dict) and value.get("values") is not None:
        return json.dumps(value["values"])
    return json.dumps(value)
