"""Chat completion chunks in, Responses API stream events out, each with its `sequence_number`.

The grammar OpenAI sends and the openai SDK's `responses.stream` helper accumulates:
`response.created`, `response.in_progress`; per output item `response.output_item.added`, then
its parts and deltas (`response.content_part.added` before text deltas); at the end each item's
`…done` events and `response.output_item.done`, then `response.completed` (or
`response.incomplete` when the answer was cut) carrying the whole response with its usage.

Items stay open until the answer ends, so a provider that interleaves text and tool calls, or
sends a call's arguments late, still accumulates to the right item.
"""

from __future__ import annotations

from typing import Any

from switchboard.surfaces.responses_answer import (
    ResponseFrame,
    function_call_item,
    incomplete_reason,
    message_item,
    reasoning_item,
    refusal_part,
    summary_part,
    text_part,
)
from switchboard.upstream.types import Usage
from switchboard.wire.responses import COMPLETED, FAILED, INCOMPLETE
from switchboard.wire.sse import frame_event


class _Message:
    __slots__ = ("id", "order", "output_index", "refusal", "text")

    def __init__(self, item_id: str, output_index: int) -> None:
        self.id, self.output_index = item_id, output_index
        self.text = self.refusal = ""
        self.order: list[str] = []  # its parts ("text", "refusal") in the order they opened

    def parts(self) -> list[dict[str, Any]]:
        return [text_part(self.text) if k == "text" else refusal_part(self.refusal) for k in self.order]


class _Call:
    __slots__ = ("arguments", "call_id", "id", "name", "output_index")

    def __init__(self, item_id: str, output_index: int, call_id: str, name: str) -> None:
        self.id, self.output_index, self.call_id, self.name = item_id, output_index, call_id, name
        self.arguments = ""


class _Reasoning:
    __slots__ = ("id", "output_index", "text")

    def __init__(self, item_id: str, output_index: int) -> None:
        self.id, self.output_index, self.text = item_id, output_index, ""


_Item = _Message | _Call | _Reasoning


class ResponseEvents:
    """One stream's translation state. `feed` each chat chunk, then `finish` (or `failure`)."""

    def __init__(self, frame: ResponseFrame) -> None:
        self.frame = frame
        self.sequence = 0  # the next event's number
        self._out: list[bytes] = []
        self._started = False
        self._items: list[_Item] = []
        self._message: _Message | None = None
        self._reasoning: _Reasoning | None = None
        self._calls: dict[int, _Call] = {}
        self._finish_reason: Any = None
        self._model: Any = None

    # --- writing events -------------------------------------------------------------------------
    def _emit(self, kind: str, **fields: Any) -> None:
        payload = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        self._out.append(frame_event(kind, payload))

    def _take(self) -> bytes:
        out, self._out = b"".join(self._out), []
        return out

    def _start(self) -> None:
        if not self._started:
            self._started = True
            started = self.frame.response("in_progress", [], model=self._model)
            self._emit("response.created", response=started)
            self._emit("response.in_progress", response=started)

    # --- chat chunks in -------------------------------------------------------------------------
    def feed(self, chunk: dict[str, Any]) -> bytes:
        if self._model is None and chunk.get("model"):
            self._model = chunk["model"]
        self._start()
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("reasoning_content"), str) and delta["reasoning_content"]:
                self._reasoning_delta(delta["reasoning_content"])
            if isinstance(delta.get("content"), str) and delta["content"]:
                self._text_delta(delta["content"])
            if isinstance(delta.get("refusal"), str) and delta["refusal"]:
                self._refusal_delta(delta["refusal"])
            for call in delta.get("tool_calls") or ():
                if isinstance(call, dict):
                    self._call_delta(call)
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
        return self._take()

    def _open(self, item: _Item, shown: dict[str, Any]) -> None:
        self._items.append(item)
        self._emit("response.output_item.added", output_index=item.output_index, item=shown)

    def _open_message(self) -> _Message:
        if self._message is None:
            self._message = _Message(self.frame.item_id("msg"), len(self._items))
            self._open(self._message, message_item(self._message.id, [], "in_progress"))
        return self._message

    def _open_part(self, kind: str) -> tuple[_Message, dict[str, Any]]:
        message = self._open_message()
        where = {"item_id": message.id, "output_index": message.output_index}
        if kind not in message.order:
            message.order.append(kind)
            part = text_part("") if kind == "text" else refusal_part("")
            at = {**where, "content_index": len(message.order) - 1}
            self._emit("response.content_part.added", **at, part=part)
        return message, {**where, "content_index": message.order.index(kind)}

    def _text_delta(self, piece: str) -> None:
        message, where = self._open_part("text")
        message.text += piece
        self._emit("response.output_text.delta", **where, delta=piece, logprobs=[])

    def _refusal_delta(self, piece: str) -> None:
        message, where = self._open_part("refusal")
        message.refusal += piece
        self._emit("response.refusal.delta", **where, delta=piece)

    def _reasoning_delta(self, piece: str) -> None:
        reasoning = self._reasoning
        if reasoning is None:
            reasoning = self._reasoning = _Reasoning(self.frame.item_id("rs"), len(self._items))
            self._open(reasoning, reasoning_item(reasoning.id, []))
            where = {"item_id": reasoning.id, "output_index": reasoning.output_index, "summary_index": 0}
            self._emit("response.reasoning_summary_part.added", **where, part=summary_part(""))
        reasoning.text += piece
        self._emit(
            "response.reasoning_summary_text.delta",
            item_id=reasoning.id,
            output_index=reasoning.output_index,
            summary_index=0,
            delta=piece,
        )

    def _call_index(self, call: dict[str, Any], call_id: str | None) -> int:
        index = call.get("index")
        if isinstance(index, int):
            return index
        # Chat requires `index`; a provider that omits it is read by the call's id, else as the last call.
        for known, item in self._calls.items():
            if item.call_id == call_id:
                return known
        return len(self._calls) if call_id is not None or not self._calls else max(self._calls)

    def _call_delta(self, call: dict[str, Any]) -> None:
        call_id = call["id"] if isinstance(call.get("id"), str) and call["id"] else None
        index = self._call_index(call, call_id)
        function = call.get("function") or {}
        name = function["name"] if isinstance(function.get("name"), str) else ""
        item = self._calls.get(index)
        if item is None:
            n = len(self._calls)
            call_id = call_id or self.frame.item_id("call", n)
            item = self._calls[index] = _Call(self.frame.item_id("fc", n), len(self._items), call_id, name)
            self._open(item, function_call_item(item.id, call_id, name, "", "in_progress"))
        elif not item.name:
            item.name = name
        piece = function.get("arguments")
        if isinstance(piece, str) and piece:
            item.arguments += piece
            self._emit(
                "response.function_call_arguments.delta",
                item_id=item.id,
                output_index=item.output_index,
                delta=piece,
            )

    # --- the end --------------------------------------------------------------------------------
    def _close(self, item: _Item, status: str) -> dict[str, Any]:
        where = {"item_id": item.id, "output_index": item.output_index}
        done: dict[str, Any]
        if isinstance(item, _Message):
            for content_index, (kind, part) in enumerate(zip(item.order, item.parts(), strict=True)):
                at = {**where, "content_index": content_index}
                if kind == "text":
                    self._emit("response.output_text.done", **at, text=item.text, logprobs=[])
                else:
                    self._emit("response.refusal.done", **at, refusal=item.refusal)
                self._emit("response.content_part.done", **at, part=part)
            done = message_item(item.id, item.parts(), status)
        elif isinstance(item, _Call):
            arguments, name = item.arguments, item.name
            self._emit("response.function_call_arguments.done", **where, arguments=arguments, name=name)
            done = function_call_item(item.id, item.call_id, item.name, item.arguments, status)
        else:
            summary = summary_part(item.text)
            self._emit("response.reasoning_summary_text.done", **where, summary_index=0, text=item.text)
            self._emit("response.reasoning_summary_part.done", **where, summary_index=0, part=summary)
            done = reasoning_item(item.id, [summary])
        self._emit("response.output_item.done", output_index=item.output_index, item=done)
        return done

    def finish(self, usage: Usage | None) -> bytes:
        """The chat stream ended: every item's done events, then the whole response with its usage."""
        self._start()
        if self._message is None and not self._calls:
            self._open_part("text")  # an answer always has its message, even an empty one
        incomplete = incomplete_reason(self._finish_reason)
        status = "incomplete" if incomplete else "completed"
        output = [self._close(item, status) for item in self._items]
        response = self.frame.response(status, output, usage, incomplete, self._model)
        self._emit(INCOMPLETE if incomplete else COMPLETED, response=response)
        return self._take()

    def failure(self, code: str, message: str) -> bytes:
        """The stream broke after its first event: OpenAI's `error` event, then `response.failed`."""
        self._start()
        self._emit("error", code=code, message=message, param=None)
        response = self.frame.response("failed", [], model=self._model)
        # The response's error code is one of the Responses API's few; the `error` event has ours.
        kind = "rate_limit_exceeded" if code == "rate_limit_exceeded" else "server_error"
        response["error"] = {"code": kind, "message": message}
        self._emit(FAILED, response=response)
        return self._take()
