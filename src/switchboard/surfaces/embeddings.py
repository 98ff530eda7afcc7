"""OpenAI embeddings (`POST /v1/embeddings`): relayed to `openai`, through litellm for other kinds
(the upstream client chooses); never streamed, never over chat."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from starlette.datastructures import Headers

from switchboard.surfaces.codec import Codec, Decoded, decoded
from switchboard.surfaces.request_body import check_embeddings_body
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.types import UpstreamReply, UpstreamTarget


class EmbeddingsCodec(Codec):
    name = "embeddings"
    endpoint = "embeddings"

    def decode(self, body: dict[str, Any], headers: Headers) -> Decoded:
        check_embeddings_body(body)
        return decoded(False)

    def speaks(self, provider: str) -> bool:
        return True

    def relay(
        self, upstream: UpstreamClient, target: UpstreamTarget, body: dict[str, Any], headers: bytes
    ) -> Awaitable[UpstreamReply]:
        return upstream.embeddings(target, body)
