"""The legacy text-completion surface (`POST /v1/completions`) as a codec over chat completions.

`openai` credentials get the request relayed as it came; every other provider kind gets a chat
completion with the prompt as its one user message, answered back as `text_completion` objects.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import orjson
from starlette.datastructures import Headers

from switchboard.errors import BadRequest
from switchboard.surfaces.codec import Codec, Decoded, decoded
from switchboard.surfaces.request_body import check_generation_fields, client_wants_usage
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import StreamEvent, UpstreamReply, UpstreamStream, UpstreamTarget
from switchboard.wire.sse import frame, payload_of

# Legacy parameters with a chat equivalent of the same name and meaning.
_SHARED = (
    "max_tokens",
    "temperature",
    "top_p",
    "n",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "user",
    "logit_bias",
    "stream",
    "stream_options",
)
# Legacy-only features no chat model offers; their neutral values are accepted (clients send them).
_NEUTRAL: dict[str, tuple[object, ...]] = {
    "echo": (None, False),
    "suffix": (None, ""),
    "best_of": (None, 1),
    "logprobs": (None, 0),
}


def check_completions_body(body: dict[str, Any]) -> None:
    """What every provider kind needs: a prompt, as a string, strings, or token ids."""
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return
    if isinstance(prompt, list) and prompt and all(isinstance(p, str | int | list) for p in prompt):
        return
    raise BadRequest("`prompt` must be a string or a non-empty array", param="prompt")


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """The chat request that stands in for a legacy one on a provider without text completions."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise BadRequest(
            "this model takes one text prompt on /v1/completions (not several, not token ids)",
            param="prompt",
        )
    for name, neutral in _NEUTRAL.items():
        if body.get(name) not in neutral:
            raise BadRequest(
                f"`{name}` is not supported on /v1/completions for this model's provider",
                param=name,
                openai_code="unsupported_parameter",
            )
    chat = {name: body[name] for name in _SHARED if name in body}
    chat["model"] = body.get("model")
    chat["messages"] = [{"role": "user", "content": prompt}]
    return chat


def _head(chunk: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": chunk.get("id"),
        "object": "text_completion",
        "created": chunk.get("created"),
        "model": chunk.get("model"),
    }


def _text_choice(choice: dict[str, Any], part: str) -> dict[str, Any]:
    message = choice.get(part) or {}
    return {
        "text": message.get("content") or "",
        "index": choice.get("index", 0),
        "logprobs": None,
        "finish_reason": choice.get("finish_reason"),
    }


def text_completion_reply(reply: UpstreamReply) -> UpstreamReply:
    """A chat completion's JSON answered as a `text_completion`."""
    chat = orjson.loads(reply.body)
    answer = _head(chat)
    answer["choices"] = [_text_choice(c, "message") for c in chat.get("choices") or []]
    if chat.get("usage") is not None:
        answer["usage"] = chat["usage"]
    return UpstreamReply(body=orjson.dumps(answer), usage=reply.usage, status=reply.status)


def _text_event(event: StreamEvent) -> StreamEvent:
    chunk = orjson.loads(payload_of(event.data))
    out = _head(chunk)
    out["choices"] = [_text_choice(c, "delta") for c in chunk.get("choices") or []]
    if chunk.get("usage") is not None:
        out["usage"] = chunk["usage"]
    return StreamEvent(frame(out), event.is_usage_only)


class TextCompletionStream(UpstreamStream):
    """A chat stream's events as `text_completion` chunks; usage, cancel and errors pass through."""

    def __init__(self, chat: UpstreamStream) -> None:
        self._chat = chat
        self.client_wants_usage = chat.client_wants_usage

    async def __anext__(self) -> StreamEvent:
        try:
            return _text_event(await anext(self._chat))
        finally:
            self.usage = self._chat.usage

    def ready(self) -> list[StreamEvent]:
        events = [_text_event(event) for event in self._chat.ready()]
        self.usage = self._chat.usage
        return events

    async def aclose(self) -> None:
        await self._chat.aclose()


class CompletionsCodec(Codec):
    """Relayed to `openai`; over chat for every other provider kind."""

    name = "completions"
    endpoint = "completions"

    def decode(self, body: dict[str, Any], headers: Headers) -> Decoded:
        check_completions_body(body)
        return decoded(check_generation_fields(body), client_wants_usage(body))

    def speaks(self, provider: str) -> bool:
        return provider == "openai"

    def relay(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> Awaitable[UpstreamReply]:
        return upstream.completions(target, body)

    def relay_stream(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> UpstreamStream:
        return upstream.completions_stream(target, body)

    def to_chat(self, body: dict[str, Any], max_output: int | None) -> dict[str, Any]:
        return chat_body(body)

    def answer(self, chat: UpstreamReply, body: dict[str, Any]) -> UpstreamReply:
        return text_completion_reply(chat)

    def stream(self, chat: UpstreamStream, body: dict[str, Any]) -> UpstreamStream:
        return TextCompletionStream(chat)
