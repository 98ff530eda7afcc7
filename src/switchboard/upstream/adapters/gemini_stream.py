"""Gemini's streamGenerateContent events (alt=sse) as OpenAI chat.completion.chunk events.

Each Gemini event is a whole GenerateContentResponse with the text, thoughts or function calls
generated since the last one. Every chunk carries the stream's one id (the first event's
`responseId`, else one made up; litellm makes a new one per event). The finish chunk follows the
content, then one usage-only chunk from the last usageMetadata (Gemini repeats it on every event).
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from switchboard.upstream.adapters.base import StreamMapper
from switchboard.upstream.adapters.gemini_answer import (
    finish_reason,
    in_band_error,
    load,
    logprobs,
    new_id,
    read_parts,
    served_model,
    usage_of,
)
from switchboard.upstream.types import StreamEvent

_END = b"]}\n\n"


class GeminiStreamMapper(StreamMapper):
    def __init__(self, model: str) -> None:
        self.usage = None
        self._model = model
        self._head = b""  # `data: {"id":…,"object":…,"created":…,"model":…,"choices":[`, once known
        self._role_sent = False
        self._calls = 0  # tool calls so far: their `index`
        self._called = False  # a function call came: the finish reason is tool_calls
        self._meta: dict[str, Any] | None = None
        self._candidates: Any = None

    def event(self, data: bytes) -> list[StreamEvent]:
        payload = load(data)
        if "error" in payload:
            raise in_band_error(payload)
        if not self._head:
            identity = payload.get("responseId") or new_id("chatcmpl-")
            self._head = (
                b'data: {"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"choices":['
                % (
                    orjson.dumps(identity),
                    int(time.time()),
                    orjson.dumps(served_model(payload, self._model)),
                )
            )
        events: list[StreamEvent] = []
        candidates = payload.get("candidates")
        meta = payload.get("usageMetadata")
        if isinstance(meta, dict):
            self._meta, self._candidates = meta, candidates
            if "candidatesTokenCount" in meta or "thoughtsTokenCount" in meta:
                # A running count: kept, so that a stream cut short still meters what was generated.
                self.usage = usage_of(meta, candidates)
        feedback = payload.get("promptFeedback")
        if isinstance(feedback, dict) and "blockReason" in feedback:
            self._emit(events, 0, {}, "content_filter")
        for position, candidate in enumerate(candidates if isinstance(candidates, list) else ()):
            if isinstance(candidate, dict) and ("content" in candidate or "finishReason" in candidate):
                self._candidate(candidate, position, events)
        return events

    def _candidate(self, candidate: dict[str, Any], position: int, events: list[StreamEvent]) -> None:
        index = candidate.get("index", position)
        content_obj = candidate.get("content")
        parts = content_obj.get("parts") if isinstance(content_obj, dict) else None
        content, reasoning, calls = read_parts(parts, self._calls)
        delta: dict[str, Any] = {}
        if content is not None:
            delta["content"] = content
        if reasoning is not None:
            delta["reasoning_content"] = reasoning
        if calls:
            delta["tool_calls"] = calls
            self._calls += len(calls)
            self._called = True
        scores = logprobs(candidate)
        if delta or scores is not None:
            self._emit(events, index, delta, None, scores=scores)
        native = candidate.get("finishReason")
        if native is not None:
            self._emit(events, index, {}, finish_reason(native, self._called))

    def _chunk(
        self, index: int, delta: dict[str, Any], finish: str | None, scores: dict[str, Any] | None = None
    ) -> StreamEvent:
        choice = {"index": index, "delta": delta, "logprobs": scores, "finish_reason": finish}
        return StreamEvent(self._head + orjson.dumps(choice) + _END)

    def _emit(
        self, events: list[StreamEvent], index: int, delta: dict[str, Any], finish: str | None, **more: Any
    ) -> None:
        """The first chunk names the role; a finish chunk carries nothing else (litellm sends the
        role alone first when the stream's first word is its end)."""
        if not self._role_sent:
            self._role_sent = True
            if finish is None:
                delta = {"role": "assistant", **delta}
            else:
                events.append(self._chunk(index, {"role": "assistant"}, None))
        events.append(self._chunk(index, delta, finish, **more))

    def end(self) -> list[StreamEvent]:
        if self._meta is None or not self._head:
            return []
        self.usage = usage = usage_of(self._meta, self._candidates)
        if usage is None:
            return []
        tail = b'],"usage":' + orjson.dumps(usage.to_openai()) + b"}\n\n"
        return [StreamEvent(self._head + tail, is_usage_only=True)]
