"""The official SDKs as the tests call a gateway with them: no retries (a test sees the first answer),
a bound on every call."""

from __future__ import annotations

from typing import Any

import anthropic
import openai

from tests.support.gateway import User


def openai_client(gateway: Any, user: User) -> openai.OpenAI:
    """`gateway`: anything with a `url` (an in-process gateway or a served one)."""
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0, timeout=20)


def anthropic_client(gateway: Any, user: User) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=user.token, max_retries=0, timeout=20)
