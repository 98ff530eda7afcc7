"""The official SDKs as the tests call a gateway with them: no retries (a test sees the first answer),
a bound on every call."""

from __future__ import annotations

import contextlib
from typing import Any

import anthropic
import openai

from tests.support.gateway import User
from tests.support.recorder import tls_context


class _ClosedWhenCollected:
    """Mixed into an SDK's own client class: closes it when collected, as the client an SDK makes for
    itself does (the SDK does not close a client it was handed). No base of its own: the anthropic
    SDK's client is not an `httpx.Client`."""

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if not self.is_closed:  # type: ignore[attr-defined]
                self.close()  # type: ignore[attr-defined]


# Each SDK's own client class (its defaults), given the process's one TLS context
# (recorder.tls_context) rather than a CA bundle loaded for each SDK client.
class _OpenAIHttp(_ClosedWhenCollected, openai.DefaultHttpxClient):
    pass


class _AnthropicHttp(_ClosedWhenCollected, anthropic.DefaultHttpxClient):
    pass


def openai_client(gateway: Any, user: User) -> openai.OpenAI:
    """`gateway`: anything with a `url` (an in-process gateway or a served one)."""
    return openai.OpenAI(
        base_url=f"{gateway.url}/v1",
        api_key=user.token,
        max_retries=0,
        timeout=20,
        http_client=_OpenAIHttp(verify=tls_context()),
    )


def anthropic_client(gateway: Any, user: User) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=gateway.url,
        api_key=user.token,
        max_retries=0,
        timeout=20,
        http_client=_AnthropicHttp(verify=tls_context()),
    )
