"""Anthropic Messages streams (SPEC §16): OpenAI chat chunks as Anthropic's events, and an `anthropic`
provider's own events relayed as they came; either way the closing `message_stop` is held back until
the call is settled (surfaces/stream.py's `end`), as `[DONE]` is on chat completions.

Grammar: message_start; per block content_block_start, its deltas (text_delta, input_json_delta),
content_block_stop; message_delta with the stop reason and the usage; message_stop. Every `event:`
names its data's `type`; there is no `[DONE]`.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from switchboard.error_shapes import Surface, error_body
from switchboard.errors import SwitchboardError, UpstreamFailed
from switchboard.surfaces.messages_reply import anthropic_usage, stop_reason
from switchboard.surfaces.stream import SurfaceStream
from switchboard.upstream.types import StreamEvent, UpstreamStream, Usage
from switchboard.upstream.usage_openai import openai_usage
from switchboard.wire.sse import frame_event, payload_of

MESSAGE_STOP = frame_event("message_stop", {"type": "message_stop"})


def event(payload: dict[str, Any]) -> bytes:
    name: str = payload["type"]
    return frame_event(name, payload)


def error_event(error: BaseException) -> bytes:
    """A failure after the first byte, as Anthropic reports one mid-stream."""
    if isinstance(error, SwitchboardError):
        return event(error_body(error, Surface.ANTHROPIC))
    return event({"type": "error", "error": {"type": "api_error", "message": "the provider stream failed"}})


class MessagesStream(SurfaceStream):
    """A chat stream (any provider kind) as Anthropic events; usage, cancel and errors pass through."""

    end = MESSAGE_STOP

    def __init__(self, chat: UpstreamStream) -> None:
        self._chat = chat
        self._started = False
        self._index = -1  # the last block opened
        self._open = False  # whether that block still awaits its content_block_stop
        self._text_open = False
        self._tools: dict[int, int] = {}  # OpenAI tool call index → block index
        self._stop: str | None = None
        self._counted: Usage | None = None  # the usage chunk's
        self._ended = False

    async def __anext__(self) -> StreamEvent:
        while True:
            try:
                chunk = await anext(self._chat)
            except StopAsyncIteration:
                self.usage = self._chat.usage
                if self._ended:
                    raise
                return StreamEvent(self._finish())
            self.usage = self._chat.usage
            data = self._map(chunk)
            if data:
                return StreamEvent(data)

    def ready(self) -> list[StreamEvent]:
        mapped = [StreamEvent(data) for chunk in self._chat.ready() if (data := self._map(chunk))]
        self.usage = self._chat.usage
        return mapped

    async def aclose(self) -> None:
        await self._chat.aclose()

    def error_event(self, error: BaseException) -> bytes:
        return error_event(error)

    # --- mapping ---------------------------------------------------------------------------------
    def _map(self, chunk: StreamEvent) -> bytes:
        if self._ended:
            return b""
        try:
            payload = orjson.loads(payload_of(chunk.data))
        except orjson.JSONDecodeError:
            raise UpstreamFailed("the provider sent a stream event that is not JSON") from None
        out = b"" if self._started else self._message_start(payload)
        choices = payload.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        delta = choice.get("delta") or {}
        text = delta.get("content")
        if isinstance(text, str) and text:
            out += self._text(text)
        for call in delta.get("tool_calls") or []:
            if isinstance(call, dict):
                out += self._tool_call(call)
        if choice.get("finish_reason"):
            self._stop = stop_reason(choice["finish_reason"], bool(self._tools))
            out += self._close()
        if isinstance(payload.get("usage"), dict):
            self._counted = openai_usage(payload["usage"], payload.get("service_tier"))
            if self._stop is not None:
                out += self._message_delta()
        return out

    def _message_start(self, chunk: dict[str, Any]) -> bytes:
        self._started = True
        message: dict[str, Any] = {
            "id": chunk.get("id") or f"msg_{uuid.uuid4().hex}",
            "type": "message",
            "role": "assistant",
            "model": chunk.get("model"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            # The count comes with the stream's last chunk: message_delta carries it (as Anthropic's
            # own message_delta may), and the SDKs take it from there.
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return event({"type": "message_start", "message": message})

    def _text(self, text: str) -> bytes:
        out = b""
        if not self._text_open:
            out += self._close() + self._start({"type": "text", "text": ""})
            self._text_open = True
        delta = {"type": "text_delta", "text": text}
        return out + event({"type": "content_block_delta", "index": self._index, "delta": delta})

    def _tool_call(self, call: dict[str, Any]) -> bytes:
        out = b""
        position = call.get("index", 0)
        function = call.get("function") or {}
        if position not in self._tools:  # a call's first chunk names it
            out += self._close()
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": function.get("name"),
                "input": {},
            }
            out += self._start(block)
            self._tools[position] = self._index
        piece = function.get("arguments")
        if isinstance(piece, str) and piece:
            delta = {"type": "input_json_delta", "partial_json": piece}
            index = self._tools[position]
            out += event({"type": "content_block_delta", "index": index, "delta": delta})
        return out

    def _start(self, block: dict[str, Any]) -> bytes:
        self._index += 1
        self._open = True
        return event({"type": "content_block_start", "index": self._index, "content_block": block})

    def _close(self) -> bytes:
        if not self._open:
            return b""
        self._open = self._text_open = False
        return event({"type": "content_block_stop", "index": self._index})

    def _message_delta(self) -> bytes:
        self._ended = True
        usage = self._counted or self._chat.usage or Usage()
        delta = {"stop_reason": self._stop or "end_turn", "stop_sequence": None}
        return event({"type": "message_delta", "delta": delta, "usage": anthropic_usage(usage)})

    def _finish(self) -> bytes:
        """The chat stream ended without its usage chunk after the finish (or without a finish)."""
        if not self._started:
            raise UpstreamFailed("the provider's stream ended before its answer began")
        return self._close() + self._message_delta()


class HeldStop(SurfaceStream):
    """An `anthropic` provider's own events, byte for byte, but for its message_stop: held as `end`,
    which the relay reads once the stream is over (none when the provider broke off without one).
    A provider `error` event ends the stream as a failure that carries it (upstream/native.py): it
    goes out as it came, as the stream's last event, once the call is settled. Any event before it
    (`message_start`, a `ping`) has begun the stream; an error before every event is the attempt's
    failure, and the call moves on to its next route (SPEC §14)."""

    def __init__(self, native: UpstreamStream) -> None:
        self._native = native

    async def __anext__(self) -> StreamEvent:
        while True:
            found = await anext(self._native)
            self.usage = self._native.usage
            if not self._holds(found):
                return found

    def ready(self) -> list[StreamEvent]:
        events = [found for found in self._native.ready() if not self._holds(found)]
        self.usage = self._native.usage
        return events

    async def aclose(self) -> None:
        await self._native.aclose()

    def error_event(self, error: BaseException) -> bytes:
        if isinstance(error, SwitchboardError) and error.provider_event:
            return error.provider_event
        return error_event(error)

    def _holds(self, found: StreamEvent) -> bool:
        if b"message_stop" not in found.data:  # text deltas pass without a parse
            return False
        for line in found.data.splitlines():
            if line.startswith(b"data:"):
                try:
                    payload = orjson.loads(line[5:])
                except orjson.JSONDecodeError:
                    return False
                if isinstance(payload, dict) and payload.get("type") == "message_stop":
                    self.end = found.data
                    return True
        return False
