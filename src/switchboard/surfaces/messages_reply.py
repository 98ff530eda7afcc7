"""An OpenAI chat answer as an Anthropic Messages answer: the Anthropic adapter's reply mapping run
the other way (SPEC §16).

The message's text becomes one `text` block and each tool call a `tool_use` block with the
provider's call id; `finish_reason` becomes `stop_reason` through the adapter's own table read
backwards; usage is Anthropic's, whose `input_tokens` leaves out the cache reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from switchboard.errors import BadRequest, UpstreamFailed
from switchboard.upstream.types import UpstreamReply, Usage
from switchboard.wire.anthropic import FINISH_REASONS, arguments

# finish_reason → stop_reason: FINISH_REASONS backwards, where the first stop reason listed for a
# finish reason wins (stop → end_turn rather than stop_sequence, length → max_tokens).
STOP_REASONS: dict[str, str] = {}
for _stop, _finish in FINISH_REASONS.items():
    STOP_REASONS.setdefault(_finish, _stop)
STOP_REASONS["function_call"] = "tool_use"


def stop_reason(finish_reason: object, called_tools: bool) -> str:
    # Some providers say `stop` when the answer is tool calls; Anthropic's clients look for tool_use.
    if called_tools:
        return "tool_use"
    return STOP_REASONS.get(finish_reason, "end_turn") if isinstance(finish_reason, str) else "end_turn"


def anthropic_usage(usage: Usage) -> dict[str, int]:
    """The gateway's usage as Anthropic's (whose input_tokens excludes what was read from cache)."""
    return {
        "input_tokens": max(usage.prompt_tokens - usage.cached_tokens - usage.cache_write_tokens, 0),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "output_tokens": usage.completion_tokens,
    }


def tool_input(raw: object, name: object) -> Any:
    """A call's arguments as the object Anthropic's `input` is; cut-short JSON is closed as the adapter
    does, and arguments that are no JSON at all become an empty object rather than a failed answer."""
    try:
        value = arguments(raw, name)
    except BadRequest:
        return {}
    return value if isinstance(value, dict) else {}


def message_reply(reply: UpstreamReply) -> UpstreamReply:
    """A chat.completion's JSON answered as an Anthropic `message`."""
    try:
        chat = orjson.loads(reply.body)
    except orjson.JSONDecodeError:
        raise UpstreamFailed("the provider answered 200 with a body that is not JSON") from None
    choices = chat.get("choices") if isinstance(chat, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise UpstreamFailed("the provider answered 200 without a choice")
    choice = choices[0]
    message: Mapping[str, Any] = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    calls = [call for call in message.get("tool_calls") or [] if isinstance(call, dict)]
    for call in calls:
        function = call.get("function") or {}
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": tool_input(function.get("arguments"), function.get("name")),
            }
        )
    usage = reply.usage or Usage()
    answer = {
        "id": chat.get("id"),
        "type": "message",
        "role": "assistant",
        "model": chat.get("model"),
        "content": content,
        "stop_reason": stop_reason(choice.get("finish_reason"), bool(calls)),
        "stop_sequence": None,
        "usage": anthropic_usage(usage),
    }
    return UpstreamReply(body=orjson.dumps(answer), usage=reply.usage, status=reply.status)
