"""Anthropic's Messages format where both sides read it: the Messages surface (a client speaking it)
and the Anthropic adapter (a provider spoken to in it) map the same stop reasons, tool choices and
tool-call arguments."""

from __future__ import annotations

from typing import Any

import orjson

from switchboard.errors import BadRequest

# OpenAI's tool_choice as Anthropic's `type`.
TOOL_CHOICE_TYPES = {"auto": "auto", "none": "none", "required": "any"}

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "compaction": "length",
}


def finish_reason(stop_reason: object) -> str:
    """Anthropic's stop_reason as OpenAI's finish_reason; one litellm does not map (pause_turn,
    model_context_window_exceeded, none) is `stop`, as litellm has it."""
    return FINISH_REASONS.get(stop_reason, "stop") if isinstance(stop_reason, str) else "stop"


def arguments(raw: object, tool: object) -> Any:
    """A tool call's `arguments` string as the JSON value Anthropic wants as `input`; a call the model
    cut short (unclosed braces) is closed, as litellm does."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        raise BadRequest(f"the arguments of tool call {tool!r} must be a JSON string", param="messages")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        repaired = _closed(raw.rstrip())
        if repaired is not None:
            return repaired
    raise BadRequest(f"the arguments of tool call {tool!r} are not JSON", param="messages")


def _closed(text: str) -> Any:
    closers: list[str] = []
    in_string = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = in_string
        elif char == '"':
            in_string = not in_string
        elif not in_string and char in "{[":
            closers.append("}" if char == "{" else "]")
        elif not in_string and char in "}]" and closers and closers[-1] == char:
            closers.pop()
    if not closers:
        return None
    try:
        return orjson.loads(text.rstrip(",") + "".join(reversed(closers)))
    except orjson.JSONDecodeError:
        return None
