"""The `gemini` kind: OpenAI chat ↔ Gemini generateContent, without litellm (SPEC §15).

The request codec is gemini_request (with gemini_messages and gemini_schema), the answer codec
gemini_answer, the stream codec gemini_stream. The credential's base_url is the host root, as for
litellm: the path carries the API version.
"""

from __future__ import annotations

from typing import Any

import orjson

from switchboard.errors import BadRequest
from switchboard.upstream.adapters import gemini_answer
from switchboard.upstream.adapters.base import ProviderRequest
from switchboard.upstream.adapters.gemini_request import request_body
from switchboard.upstream.adapters.gemini_stream import GeminiStreamMapper
from switchboard.upstream.types import Usage


class GeminiAdapter:
    kind = "gemini"
    default_base_url = "https://generativelanguage.googleapis.com"
    auth_header = "x-goog-api-key"
    fixed_headers = b""

    def chat_request(self, model: str, body: dict[str, Any], *, stream: bool) -> ProviderRequest:
        operation = "streamGenerateContent?alt=sse" if stream else "generateContent"
        try:
            content = orjson.dumps(request_body(model, body))
        except orjson.JSONEncodeError:
            raise BadRequest("the request body cannot be encoded as JSON") from None
        return ProviderRequest(f"/v1beta/models/{model}:{operation}", content)

    # `context` (ProviderRequest.context) is unused: Gemini's answers need nothing of the request.
    def chat_reply(self, data: bytes, model: str, context: Any = None) -> tuple[Usage | None, bytes]:
        return gemini_answer.chat_reply(data, model)

    def stream_mapper(self, model: str, context: Any = None) -> GeminiStreamMapper:
        return GeminiStreamMapper(model)
