"""Reads a /v1 JSON body once, checks the few fields the gateway interprets, leaves the rest alone."""

from __future__ import annotations

from typing import Any

import orjson

from switchboard.errors import BadRequest


def parse_json_object(raw: bytes) -> dict[str, Any]:
    if not raw:
        raise BadRequest("request body is empty; expected a JSON object")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadRequest("request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    return body


def check_chat_body(body: dict[str, Any]) -> bool:
    """Validates what the gateway relies on; returns whether the call streams."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("`messages` must be a non-empty array", param="messages")
    if not all(isinstance(m, dict) for m in messages):
        raise BadRequest("each message must be an object", param="messages")
    return check_generation_fields(body)


def check_generation_fields(body: dict[str, Any]) -> bool:
    """The fields chat and legacy completions share; returns whether the call streams."""
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("`stream` must be a boolean", param="stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadRequest("`stream_options` must be an object", param="stream_options")
    for name in ("max_tokens", "max_completion_tokens", "n"):
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise BadRequest(f"`{name}` must be a positive integer", param=name)
    return bool(stream)


def client_wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def check_embeddings_body(body: dict[str, Any]) -> None:
    value = body.get("input")
    if isinstance(value, str) and value:
        return
    if isinstance(value, list) and value:
        return
    raise BadRequest("`input` must be a non-empty string or array", param="input")
