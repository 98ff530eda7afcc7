"""The `anthropic` provider kind: OpenAI chat requests as Anthropic Messages calls, and back (SPEC §15).

It does what litellm 1.106.0's Anthropic translation does for the same exchange, without importing
litellm: request (anthropic_request, anthropic_messages, anthropic_tools, anthropic_schema,
anthropic_media), answer (anthropic_reply) and stream (anthropic_stream). Where the two differ on
purpose, the README's "Anthropic adapter" section says how and why.
"""

from __future__ import annotations

from typing import Any

import orjson

from switchboard.errors import BadRequest
from switchboard.upstream.adapters.anthropic_reply import reply
from switchboard.upstream.adapters.anthropic_request import ReplyContext, build
from switchboard.upstream.adapters.anthropic_stream import AnthropicStreamMapper
from switchboard.upstream.adapters.base import ProviderRequest, StreamMapper
from switchboard.upstream.types import Usage

API_VERSION = "2023-06-01"
MESSAGES_PATH = "/v1/messages"


class AnthropicAdapter:
    kind = "anthropic"
    default_base_url = "https://api.anthropic.com"
    auth_header = "x-api-key"
    fixed_headers = b"anthropic-version: " + API_VERSION.encode() + b"\r\n"

    def chat_request(self, model: str, body: dict[str, Any], *, stream: bool) -> ProviderRequest:
        request, betas, context = build(model, body)
        if stream:
            request["stream"] = True
        try:
            content = orjson.dumps(request)
        except orjson.JSONEncodeError:
            raise BadRequest("the request body cannot be encoded as JSON") from None
        headers = b"anthropic-beta: " + ",".join(betas).encode() + b"\r\n" if betas else b""
        return ProviderRequest(MESSAGES_PATH, content, headers, context)

    def chat_reply(self, data: bytes, model: str, context: Any = None) -> tuple[Usage | None, bytes]:
        return reply(data, model, context if isinstance(context, ReplyContext) else None)

    def stream_mapper(self, model: str, context: Any = None) -> StreamMapper:
        return AnthropicStreamMapper(model, context if isinstance(context, ReplyContext) else None)
