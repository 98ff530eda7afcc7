"""OpenAI's Responses API (`POST /v1/responses`, SPEC §16): relayed to `openai` as it came, over chat
for every other provider kind (stateless there: surfaces/responses_request.py says why)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from starlette.datastructures import Headers

from switchboard.surfaces import responses_request
from switchboard.surfaces.codec import Codec, Decoded, decoded
from switchboard.surfaces.responses_answer import response_reply
from switchboard.surfaces.responses_stream import RelayedResponses, ResponsesStream
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.native import OPENAI_RESPONSES
from switchboard.upstream.types import UpstreamReply, UpstreamStream, UpstreamTarget


class ResponsesCodec(Codec):
    name = "responses"
    endpoint = "responses"

    def decode(self, body: dict[str, Any], headers: Headers) -> Decoded:
        return decoded(responses_request.check_responses_body(body))

    def for_agent(self, body: dict[str, Any]) -> dict[str, Any]:
        return responses_request.from_agent(body)

    def speaks(self, provider: str) -> bool:
        return provider == "openai"

    def relay(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> Awaitable[UpstreamReply]:
        return upstream.native.json(target, OPENAI_RESPONSES, body)

    def relay_stream(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> UpstreamStream:
        return RelayedResponses(upstream.native.stream(target, OPENAI_RESPONSES, body))

    def to_chat(self, body: dict[str, Any], max_output: int | None) -> dict[str, Any]:
        return responses_request.chat_body(body)

    def answer(self, chat: UpstreamReply, body: dict[str, Any]) -> UpstreamReply:
        return response_reply(chat, body)

    def stream(self, chat: UpstreamStream, body: dict[str, Any]) -> UpstreamStream:
        return ResponsesStream(chat, body)
