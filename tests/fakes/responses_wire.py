"""OpenAI's Responses API wire format (`POST /v1/responses`), as the fake provider speaks it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from tests.fakes.script import CREATED, Script


def event(payload: dict[str, Any]) -> bytes:
    return b"event: " + payload["type"].encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def _usage(script: Script) -> dict[str, Any]:
    return {
        "input_tokens": script.prompt_tokens,
        "input_tokens_details": {"cached_tokens": script.cached_tokens},
        "output_tokens": script.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": script.reasoning_tokens},
        "total_tokens": script.prompt_tokens + script.completion_tokens,
    }


def _tool_name(body: dict[str, Any]) -> str | None:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    return str(tools[0].get("name") or "tool") if tools else None


def _response(body: dict[str, Any], response_id: str, status: str, output: list[Any]) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "usage": None,
    }


def _items(script: Script, body: dict[str, Any], n: str) -> list[dict[str, Any]]:
    tool = _tool_name(body)
    if tool is not None:
        return [
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": "call_fake_1",
                "name": tool,
                "arguments": script.tool_arguments,
                "status": "completed",
            }
        ]
    part = {"type": "output_text", "text": script.reply, "annotations": []}
    return [
        {"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant", "content": [part]}
    ]


def response_body(script: Script, body: dict[str, Any], response_id: str) -> dict[str, Any]:
    done = _response(body, response_id, "completed", _items(script, body, response_id[5:]))
    done["usage"] = _usage(script)
    if script.service_tier is not None:
        done["service_tier"] = script.service_tier
    return done


def response_events(script: Script, body: dict[str, Any], response_id: str) -> Iterator[bytes]:
    """created, in_progress, then per output item: added, (content part, text deltas | argument
    deltas), done; then completed with the usage. Every event has its `sequence_number`."""
    sequence = iter(range(1_000_000))
    started = _response(body, response_id, "in_progress", [])

    def emit(payload: dict[str, Any]) -> bytes:
        return event({**payload, "sequence_number": next(sequence)})

    yield emit({"type": "response.created", "response": started})
    yield emit({"type": "response.in_progress", "response": started})
    items = _items(script, body, response_id[5:])
    for index, item in enumerate(items):
        if item["type"] == "function_call":
            yield emit(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": ""},
                }
            )
            args = item["arguments"]
            for i in range(0, len(args), 8):
                yield emit(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "delta": args[i : i + 8],
                    }
                )
            yield emit(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "arguments": args,
                }
            )
        else:
            empty = {**item, "status": "in_progress", "content": []}
            yield emit({"type": "response.output_item.added", "output_index": index, "item": empty})
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            part = {"type": "output_text", "text": "", "annotations": []}
            yield emit({"type": "response.content_part.added", **where, "part": part})
            for piece in script.pieces():
                yield emit({"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []})
            yield emit({"type": "response.output_text.done", **where, "text": script.reply, "logprobs": []})
            yield emit({"type": "response.content_part.done", **where, "part": item["content"][0]})
        yield emit({"type": "response.output_item.done", "output_index": index, "item": item})
    yield emit({"type": "response.completed", "response": response_body(script, body, response_id)})


def failed_event(
    body: dict[str, Any],
    response_id: str,
    sequence: int,
    code: str,
    message: str,
    usage: dict[str, Any] | None = None,
) -> bytes:
    """`response.failed`, as OpenAI ends a Responses stream whose model failed part-way."""
    response = {**_response(body, response_id, "failed", []), "error": {"code": code, "message": message}}
    response["usage"] = usage
    return event({"type": "response.failed", "sequence_number": sequence, "response": response})


def error_event(sequence: int, code: str, message: str) -> bytes:
    """The Responses stream's `error` event."""
    payload = {"type": "error", "sequence_number": sequence, "code": code, "message": message, "param": None}
    return event(payload)


def usage_of(script: Script) -> dict[str, Any]:
    return _usage(script)
