"""Callers with a credential of every provider kind the Responses surface reaches: `openai` (relayed),
`anthropic` and `gemini` (the gateway's adapters) and `mistral` (an OpenAI-wire long-tail kind, through
litellm), each pointing at the fake provider."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm.conftest import Caller, add_credential, make_caller
from tests.support.gateway import Gateway

KINDS = ("openai", "anthropic", "gemini", "mistral")
TRANSLATED = ("anthropic", "gemini", "mistral")
# Where each kind's call lands at the fake provider.
PATHS = {
    "openai": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": ":generateContent",
    "mistral": "/v1/chat/completions",
}
STREAM_PATHS = {**PATHS, "gemini": ":streamGenerateContent"}


@pytest.fixture
def caller(gateway: Gateway, fake_provider: Any) -> Iterator[Caller]:
    made = make_caller(gateway, fake_provider, ("openai", "anthropic", "gemini"))
    # A long-tail kind takes litellm's api_base: an OpenAI-wire server's /v1.
    made.keys["mistral"], made.credential_ids["mistral"] = add_credential(
        made.user, "mistral", f"{fake_provider.base_url}/v1"
    )
    yield made
    made.sdk.close()
