"""Every /v1 model-call route, once: the fast path (llm/fast_routes.py) and the FastAPI routes that
document them (llm/router.py) are both generated from this list, in this order (the OpenAPI order).
A new surface is a codec (surfaces/codec.py) and one entry here."""

from __future__ import annotations

from dataclasses import dataclass

from switchboard.surfaces.chat import ChatCodec
from switchboard.surfaces.codec import Codec
from switchboard.surfaces.completions import CompletionsCodec
from switchboard.surfaces.embeddings import EmbeddingsCodec
from switchboard.surfaces.messages import MessagesCodec
from switchboard.surfaces.responses import ResponsesCodec
from switchboard.wire import paths

PREFIX = paths.V1


@dataclass(frozen=True, slots=True)
class SurfaceRoute:
    """A POST route under /v1 and what OpenAPI says of it. The request body is documented as any
    JSON object: it is read raw, so that fields the gateway does not interpret pass through."""

    path: str
    operation_id: str
    summary: str
    description: str | None
    # None: the gateway answers itself, no provider call is relayed (COUNT_TOKENS below).
    codec: Codec | None

    @property
    def full_path(self) -> str:
        return PREFIX + self.path


COUNT_TOKENS = paths.COUNT_TOKENS

ROUTES: tuple[SurfaceRoute, ...] = (
    SurfaceRoute(paths.CHAT, "createChatCompletion_LLM", "Chat Completions", None, ChatCodec()),
    SurfaceRoute(
        paths.COMPLETIONS,
        "createCompletion_LLM",
        "Completions",
        "The legacy text-completion API (relayed to `openai`, over chat for other providers).",
        CompletionsCodec(),
    ),
    SurfaceRoute(
        paths.RESPONSES,
        "createResponse_LLM",
        "Responses",
        "OpenAI's Responses API (relayed to `openai`, over chat for other providers; stateless there).",
        ResponsesCodec(),
    ),
    SurfaceRoute(
        paths.MESSAGES,
        "createMessage_LLM",
        "Messages",
        "Anthropic's Messages API (relayed to `anthropic`, translated for other providers); the key may\n"
        "come in `x-api-key` as well as `Authorization: Bearer`.",
        MessagesCodec(),
    ),
    SurfaceRoute(
        COUNT_TOKENS,
        "countMessageTokens_LLM",
        "Count Message Tokens",
        "A Messages request's input tokens: asked of Anthropic, counted by the gateway for other providers.",
        None,
    ),
    SurfaceRoute(paths.EMBEDDINGS, "createEmbedding_LLM", "Embeddings", None, EmbeddingsCodec()),
)
