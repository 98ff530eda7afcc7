"""OpenAI chat completions (`POST /v1/chat/completions`): the gateway's common format.

Every provider kind is asked in it: the upstream client relays it to `openai` and adapts it for the
others (upstream/adapters/, litellm), so nothing here translates.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from starlette.datastructures import Headers

from switchboard.surfaces.codec import Codec, Decoded, decoded
from switchboard.surfaces.request_body import check_chat_body, client_wants_usage
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import UpstreamReply, UpstreamStream, UpstreamTarget


class ChatCodec(Codec):
    name = "chat"
    endpoint = "chat.completions"

    def decode(self, body: dict[str, Any], headers: Headers) -> Decoded:
        return decoded(check_chat_body(body), client_wants_usage(body))

    def speaks(self, provider: str) -> bool:
        return True

    def relay(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> Awaitable[UpstreamReply]:
        return upstream.chat(target, body)

    def relay_stream(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> UpstreamStream:
        return upstream.chat_stream(target, body)
