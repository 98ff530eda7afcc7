"""A chat completion answered as a Responses API `response` object: its output items, status and usage.

The stream codec (responses_stream.py) builds the same objects event by event, so that the final
`response.completed` of a stream and a non-streamed answer look alike.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from switchboard.upstream.types import UpstreamReply, Usage
from switchboard.upstream.usage_openai import openai_usage

# Chat's finish reasons that cut an answer short, as the Responses API names the cut.
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def incomplete_reason(finish_reason: Any) -> str | None:
    return _INCOMPLETE.get(finish_reason) if isinstance(finish_reason, str) else None


def usage_object(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.prompt_tokens,
        # The openai SDK's models require `cache_write_tokens`, and the Agents SDK validates it.
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def refusal_part(text: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": text}


def message_item(item_id: str, parts: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": parts}


def function_call_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


def reasoning_item(item_id: str, summary: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": item_id, "type": "reasoning", "summary": summary}


def summary_part(text: str) -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


class ResponseFrame:
    """One call's response id, item ids, and what its `response` objects repeat from the request."""

    __slots__ = ("_hex", "created_at", "id", "request")

    def __init__(self, request: dict[str, Any], created_at: int | None = None) -> None:
        self._hex = uuid.uuid4().hex
        self.id = f"resp_{self._hex}"
        self.request = request
        self.created_at = created_at if created_at is not None else int(time.time())

    def item_id(self, prefix: str, index: int | None = None) -> str:
        return f"{prefix}_{self._hex}" if index is None else f"{prefix}_{self._hex}_{index}"

    def response(
        self,
        status: str,
        output: list[dict[str, Any]],
        usage: Usage | None = None,
        incomplete: str | None = None,
        model: Any = None,
    ) -> dict[str, Any]:
        request = self.request
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": request.get("instructions"),
            "max_output_tokens": request.get("max_output_tokens"),
            "max_tool_calls": request.get("max_tool_calls"),
            "model": model or request.get("model"),
            "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
            "previous_response_id": None,
            "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
            "store": False,  # the translation keeps nothing (SPEC §16)
            "temperature": request.get("temperature", 1.0),
            "text": request.get("text") or {"format": {"type": "text"}},
            "tool_choice": request.get("tool_choice") or "auto",
            "tools": request.get("tools") or [],
            "top_p": request.get("top_p", 1.0),
            "truncation": request.get("truncation") or "disabled",
            "usage": usage_object(usage),
            "user": request.get("user"),
            "metadata": request.get("metadata") or {},
        }


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some providers answer text blocks
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return ""


def output_items(frame: ResponseFrame, message: dict[str, Any], status: str) -> list[dict[str, Any]]:
    """A chat answer's message as output items: reasoning, the message, then its function calls."""
    output: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        output.append(reasoning_item(frame.item_id("rs"), [summary_part(reasoning)]))
    text, refusal = _content_text(message.get("content")), message.get("refusal")
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    if text or refusal or not calls:
        parts = [text_part(text)] if text or not refusal else []
        if isinstance(refusal, str) and refusal:
            parts.append(refusal_part(refusal))
        output.append(message_item(frame.item_id("msg"), parts, status))
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        output.append(
            function_call_item(
                frame.item_id("fc", index),
                str(call.get("id") or frame.item_id("call", index)),
                str(function.get("name") or ""),
                str(function.get("arguments") or ""),
                "completed",
            )
        )
    return output


def response_reply(reply: UpstreamReply, request: dict[str, Any]) -> UpstreamReply:
    """A chat completion's JSON answered as a `response` object; the metered usage is unchanged."""
    chat = orjson.loads(reply.body)
    choices = chat.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    created = chat.get("created")
    frame = ResponseFrame(request, created if isinstance(created, int) else None)
    incomplete = incomplete_reason(choice.get("finish_reason"))
    status = "incomplete" if incomplete else "completed"
    output = output_items(frame, choice.get("message") or {}, status)
    usage = reply.usage
    if usage is None and isinstance(chat.get("usage"), dict):
        usage = openai_usage(chat["usage"], chat.get("service_tier"))
    answer = frame.response(status, output, usage, incomplete, chat.get("model"))
    return UpstreamReply(body=orjson.dumps(answer), usage=reply.usage, status=reply.status)
