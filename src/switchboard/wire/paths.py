"""The /v1 paths that layers below the surfaces also name: the model-call routes, the usage
records' `endpoint` for each (SPEC §8), and Anthropic's surface, whose errors and key header differ
(SPEC §16). surfaces/registry.py declares its routes with these names, so a path is written once."""

from __future__ import annotations

V1 = "/v1"

CHAT = "/chat/completions"
COMPLETIONS = "/completions"
RESPONSES = "/responses"
MESSAGES = "/messages"
COUNT_TOKENS = "/messages/count_tokens"
EMBEDDINGS = "/embeddings"

# Each model-call path, in full, named as its usage records' `endpoint`.
ENDPOINTS: dict[str, str] = {
    V1 + CHAT: "chat.completions",
    V1 + COMPLETIONS: "completions",
    V1 + RESPONSES: "responses",
    V1 + MESSAGES: "messages",
    V1 + COUNT_TOKENS: "messages.count_tokens",
    V1 + EMBEDDINGS: "embeddings",
}

_ANTHROPIC = V1 + MESSAGES


def on_v1(path: str) -> bool:
    return path == V1 or path.startswith(V1 + "/")


def on_anthropic_surface(path: str) -> bool:
    """/v1/messages and what is under it: Anthropic's error shape, and its `x-api-key` header."""
    return path == _ANTHROPIC or path.startswith(_ANTHROPIC + "/")
