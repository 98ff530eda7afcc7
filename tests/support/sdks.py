"""The official SDKs as the tests call a gateway with them: no retries (a test sees the first answer),
a bound on every call."""

from __future__ import annotations

import contextlib
from typing import Any

import anthropic
import openai

from tests.support.gateway import User
from tests.support.recorder import tls_context


class _OpenAIHttp(openai.DefaultHttpxClient):
    """The client the openai SDK makes for itself (its defaults, closed when collected), on the
    process's one TLS context (recorder.tls_context) rather than a CA bundle loaded for each SDK."""

    def __init__(self) -> None:
        super().__init__(verify=tls_context())

    def __del__(self) -> None:
        if not self.is_closed:
            with contextlib.suppress(Exception):
                self.close()


class _AnthropicHttp(anthropic.DefaultHttpxClient):
    """The same for the anthropic SDK."""

    def __init__(self) -> None:
        super().__init__(verify=tls_context())

    def __del__(self) -> None:
        if not self.is_closed:
            with contextlib.suppress(Exception):
                self.close()


def openai_client(gateway: Any, user: User) -> openai.OpenAI:
    """`gateway`: anything with a `url` (an in-process gateway or a served one)."""
    return openai.OpenAI(
        base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0, timeout=20, http_client=_OpenAIHttp()
    )


def anthropic_client(gateway: Any, user: User) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=gateway.url, api_key=user.token, max_retries=0, timeout=20, http_client=_AnthropicHttp()
    )
