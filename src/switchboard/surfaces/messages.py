"""Anthropic's Messages API (`POST /v1/messages`, SPEC §16): relayed to `anthropic` as it came (with
the client's API version and betas), translated over chat for every other provider kind."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from starlette.datastructures import Headers

from switchboard.surfaces import messages_request
from switchboard.surfaces.codec import Codec, Decoded
from switchboard.surfaces.messages_reply import message_reply
from switchboard.surfaces.messages_stream import HeldStop, MessagesStream
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.native import ANTHROPIC_MESSAGES
from switchboard.upstream.types import UpstreamReply, UpstreamStream, UpstreamTarget


class MessagesCodec(Codec):
    name = "messages"
    endpoint = "messages"
    caps_output = True

    def decode(self, body: dict[str, Any], headers: Headers) -> Decoded:
        stream = messages_request.check_messages_body(body)
        return Decoded(stream, provider_headers=messages_request.provider_headers(headers))

    def for_agent(self, body: dict[str, Any]) -> dict[str, Any]:
        return messages_request.from_agent(body)

    def speaks(self, provider: str) -> bool:
        return provider == "anthropic"

    def relay(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> Awaitable[UpstreamReply]:
        return upstream.native.json(target, ANTHROPIC_MESSAGES, body, headers)

    def relay_stream(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> UpstreamStream:
        return HeldStop(upstream.native.stream(target, ANTHROPIC_MESSAGES, body, headers))

    def to_chat(self, body: dict[str, Any], max_output: int | None) -> dict[str, Any]:
        return messages_request.chat_body(body, max_output)

    def answer(self, chat: UpstreamReply, body: dict[str, Any]) -> UpstreamReply:
        return message_reply(chat)

    def stream(self, chat: UpstreamStream, body: dict[str, Any]) -> UpstreamStream:
        return MessagesStream(chat)
