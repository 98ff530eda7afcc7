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
    # Anthropic's input_tokens excludes cache reads and writes; clients add them back to get the
    # prompt total. `cache_creation` splits the writes by how long they are kept.
    written, written_1h = script.cache_write_tokens, script.cache_write_1h_tokens
    usage: dict[str, Any] = {
        "input_tokens": script.prompt_tokens - script.cached_tokens - written,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": script.cached_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": written - written_1h,
            "ephemeral_1h_input_tokens": written_1h,
        },
        "output_tokens": output_tokens,
    }
    if script.service_tier is not None:
        usage["service_tier"] = script.service_tier
    return usage


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


# --- whole answers, for scripts that send a provider answer verbatim (Script.answer / answer_events) ---
def message(
    content: list[dict[str, Any]],
    *,
    stop: str | None = "end_turn",
    usage: dict[str, Any] | None = None,
    message_id: str = "msg_01CorpusAnswer",
    model: str = "claude-sonnet-4-5-20250929",
    stop_sequence: str | None = None,
) -> dict[str, Any]:
    """A Messages answer as Anthropic writes it."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": stop_sequence,
        "usage": usage or {"input_tokens": 25, "output_tokens": 12},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def thinking(
    value: str, signature: str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def stream_of(answer: dict[str, Any], *, piece: int = 7) -> list[bytes]:
    """The stream Anthropic sends for `answer`: message_start (its input usage and 1 output token),
    then per block content_block_start, deltas (text and thinking in pieces of `piece` characters, a
    thinking block's signature, a tool's input as input_json_delta pieces after the empty one Anthropic
    sends first), content_block_stop; a ping after the first block's start; message_delta with the
    stop reason and output tokens; message_stop."""
    usage = dict(answer["usage"])
    start_usage = {key: value for key, value in usage.items() if key != "output_tokens"}
    head = {**answer, "content": [], "stop_reason": None, "stop_sequence": None}
    events = [
        event(
            "message_start",
            {"type": "message_start", "message": {**head, "usage": {**start_usage, "output_tokens": 1}}},
        )
    ]
    for index, block in enumerate(answer["content"]):
        kind = block["type"]
        if kind == "text":
            opening, deltas = (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": p} for p in _pieces(block["text"], piece)],
            )
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], piece)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind in ("tool_use", "server_tool_use"):
            opening = {**block, "input": {}}
            arguments = orjson.dumps(block["input"]).decode() if block["input"] else ""
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, piece) if p
            ]
        else:  # redacted_thinking and the like arrive whole
            opening, deltas = block, []
        events.append(
            event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        if index == 0:
            events.append(event("ping", {"type": "ping"}))
        events += [
            event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": answer["stop_reason"], "stop_sequence": answer["stop_sequence"]}
    events.append(
        event(
            "message_delta",
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage["output_tokens"]}},
        )
    )
    events.append(event("message_stop", {"type": "message_stop"}))
    return events


def error_event(kind: str, message_text: str) -> bytes:
    return event("error", {"type": "error", "error": {"type": kind, "message": message_text}})
