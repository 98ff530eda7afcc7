"""Anthropic's stream events as OpenAI chat.completion.chunk events, one provider event at a time.

message_start gives the id, model and prompt usage; each content block's start and deltas become
content, `reasoning_content` (thinking) or tool call chunks (the first for a call carries its id,
type and name, the rest only `index` and argument pieces); message_delta gives the finish_reason and
the output tokens; message_stop closes with one `choices: []` usage chunk. Chunks are spliced from
bytes made once per stream, so a text delta costs one orjson.loads and one small orjson.dumps.
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
from switchboard.upstream.adapters.base import StreamMapper
from switchboard.upstream.types import StreamEvent
from switchboard.wire.anthropic import finish_reason
from switchboard.wire.sse import DATA

_new_event = tuple.__new__  # StreamEvent(data) without the NamedTuple's Python-level __new__
_OPEN = b',"logprobs":null,"finish_reason":'
_CLOSE = b"}]}\n\n"
_NO_FINISH = _OPEN + b"null" + _CLOSE
# Anthropic's error types, as the HTTP status each has when it is not sent mid-stream.
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicStreamMapper(StreamMapper):
    def __init__(self, model: str, context: ReplyContext | None = None) -> None:
        self._model = model
        self._context = context or UNKNOWN_CONTEXT
        self._created = int(time.time())
        self._prefix = b""  # `data: {id, object, created, model, "choices":[{"index":0,"delta":`
        self._role_sent = False
        self._raw_usage: dict[str, Any] = {}
        self._thinking: list[str] = []
        self._block = ""  # the open content block's type; "json" for a JSON-mode tool
        self._tool_index = -1
        self._tool_has_arguments = False
        self._json_answer = False  # a JSON-mode tool was turned into content: finish_reason stop
        self._finished = False
        self._closed = False

    def event(self, data: bytes) -> list[StreamEvent]:
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise UpstreamFailed("the provider sent a stream event that is not JSON") from None
        kind = payload.get("type") if isinstance(payload, dict) else None
        if kind == "content_block_delta":
            return self._delta(payload.get("delta") or {})
        if kind == "content_block_start":
            return self._start(payload.get("content_block") or {})
        if kind == "content_block_stop":
            return self._stop()
        if kind == "message_delta":
            return self._message_delta(payload)
        if kind == "message_start":
            self._message_start(payload.get("message") or {})
        elif kind == "message_stop":
            return self._usage_chunk()
        elif kind == "error":
            error = payload.get("error") if isinstance(payload.get("error"), dict) else {}
            status = ERROR_STATUS.get(str(error.get("type")), 500)
            raise provider_errors.from_response(status, {}, data, None)
        return []  # ping, and event types this gateway does not know yet

    def end(self) -> list[StreamEvent]:
        if not self._finished:
            raise UpstreamFailed("the provider's stream ended before its answer did")
        return self._usage_chunk()

    # --- events --------------------------------------------------------------------------------
    def _message_start(self, message: Mapping[str, Any]) -> None:
        # The model asked for, not the one message_start names (claude-…-latest resolved to a dated
        # id): litellm's stream says the asked one, though its whole answer says the resolved one.
        head = {
            "id": message.get("id"),
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
        }
        self._prefix = DATA + orjson.dumps(head)[:-1] + b',"choices":[{"index":0,"delta":'
        if isinstance(message.get("usage"), dict):
            self._raw_usage.update(message["usage"])
            self.usage = usage_of(self._raw_usage, None)  # known so far, should the stream break off

    def _start(self, block: Mapping[str, Any]) -> list[StreamEvent]:
        kind = block.get("type")
        self._tool_has_arguments = False
        if kind in ("tool_use", "server_tool_use"):
            self._tool_index += 1
            name = block.get("name")
            if self._context.json_mode and name == JSON_TOOL:
                self._block = "json"
                self._json_answer = True
                return []
            self._block = "tool"
            call = {
                "index": self._tool_index,
                "id": block.get("id"),
                "type": "function",
                "function": {"name": _client_name(self._context, name), "arguments": ""},
            }
            return [self._chunk({"tool_calls": [call]})]
        self._block = kind if isinstance(kind, str) else ""
        text = block.get("text") if kind == "text" else None
        return [self._chunk({"content": text})] if text else []

    def _delta(self, delta: Mapping[str, Any]) -> list[StreamEvent]:
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return [self._chunk({"content": text})] if text else []
        if kind == "input_json_delta":
            piece = delta.get("partial_json")
            if not isinstance(piece, str) or not piece:
                return []
            if self._block == "tool":
                self._tool_has_arguments = True
                call = {"index": self._tool_index, "function": {"arguments": piece}}
                return [self._chunk({"tool_calls": [call]})]
            if self._block == "json":
                return [self._chunk({"content": _json_piece(piece)})]
            return []  # the input of a server tool's result block is not a call the client makes
        if kind == "thinking_delta":
            thinking = delta.get("thinking")
            if isinstance(thinking, str) and thinking:
                self._thinking.append(thinking)
                return [self._chunk({"reasoning_content": thinking})]
        return []  # signature_delta, citations_delta: nothing OpenAI's format can carry

    def _stop(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if self._block == "tool" and not self._tool_has_arguments:
            # A call without arguments: OpenAI clients json-parse the arguments, and "" is not JSON.
            events.append(
                self._chunk({"tool_calls": [{"index": self._tool_index, "function": {"arguments": "{}"}}]})
            )
        self._block = ""
        return events

    def _message_delta(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        if isinstance(payload.get("usage"), dict):
            self._raw_usage.update(payload["usage"])  # cumulative, but may omit what message_start said
        self.usage = usage_of(self._raw_usage, "".join(self._thinking) or None)
        delta = payload.get("delta")
        stop = delta.get("stop_reason") if isinstance(delta, dict) else None
        reason = "stop" if self._json_answer else finish_reason(stop)
        self._finished = True
        return [self._chunk({}, finish=reason.encode())]

    def _usage_chunk(self) -> list[StreamEvent]:
        if self._closed:
            return []
        if not self._prefix:
            raise UpstreamFailed("the provider's stream did not start with message_start")
        self._closed = True
        if self.usage is None:
            self.usage = usage_of(self._raw_usage, "".join(self._thinking) or None)
        head = self._prefix[: -len(b'"choices":[{"index":0,"delta":')]
        data = head + b'"choices":[],"usage":' + orjson.dumps(self.usage.to_openai()) + b"}\n\n"
        return [_new_event(StreamEvent, (data, True))]

    def _chunk(self, delta: dict[str, Any], finish: bytes = b"") -> StreamEvent:
        if not self._prefix:
            raise UpstreamFailed("the provider's stream did not start with message_start")
        if not self._role_sent:
            self._role_sent = True
            delta = {"role": "assistant", **delta}
        tail = _OPEN + b'"' + finish + b'"' + _CLOSE if finish else _NO_FINISH
        return _new_event(StreamEvent, (self._prefix + orjson.dumps(delta) + tail, False))


def _client_name(context: ReplyContext, name: object) -> object:
    return context.tool_names.get(name, name) if isinstance(name, str) else name


def _json_piece(piece: str) -> str:
    """A JSON-mode argument piece as content, as litellm writes it: a piece that parses on its own is
    re-encoded (its `values` member when it has one), any other is passed on as it came."""
    try:
        value = json.loads(piece)
    except ValueError:
        return piece
    if isinstance(value, dict) and value.get("values") is not None:
        return json.dumps(value["values"])
    return json.dumps(value)
