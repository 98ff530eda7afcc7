"""The prompt bound a reservation holds is never below what a real tokenizer counts (SPEC §13).

A pure function of the request, checked here against tiktoken's cl100k_base (the copy litellm ships)
on the texts an estimate at four characters a token gets most wrong. The gateway-level behaviour
(concurrent calls at a limit's end) is tested in tests/limits/test_upper_bound.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.llm.outcomes import prompt_estimate
from switchboard.llm.prompt_bound import DEFAULT_IMAGE_TOKENS, image_tokens, prompt_bound
from switchboard.wire.tokens import _cl100k, count_tokens

OPENAI = [("openai", "gpt-4.1")]
TEXTS = {
    "cjk": "漢" * 2000,
    "japanese": "日本語のテキストはトークンが多い。" * 50,
    "emoji": "🙂🚀👩‍👩‍👧‍👦" * 200,
    "arabic": "مرحبا بالعالم " * 100,
    "digits": "31415926535897932384626433832795" * 40,
    "code": "def f(x):\n\treturn {'a': [x, x ** 2]}\n" * 60,
    "english": "The quick brown fox jumps over the lazy dog. " * 80,
}


@pytest.mark.skipif(_cl100k() is None, reason="litellm's copy of cl100k_base is not installed")
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_the_bound_is_never_below_a_real_tokenizers_count(name: str) -> None:
    text = TEXTS[name]
    body = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]}
    real = count_tokens("Be brief.") + count_tokens(text) + 3 * 2 + 3  # OpenAI's framing per message
    assert prompt_bound(body, OPENAI) >= real


def test_cjk_text_is_bound_above_the_four_characters_estimate_it_breaks() -> None:
    body = {"messages": [{"role": "user", "content": "漢" * 2000}]}
    assert prompt_estimate(body) < 2000 <= prompt_bound(body, OPENAI)


def test_every_text_the_provider_reads_counts() -> None:
    bare = prompt_bound({"messages": [{"role": "user", "content": "hi"}]}, OPENAI)
    tool = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
    for extra in (
        {"system": "x" * 1000},  # Messages
        {"instructions": "x" * 1000},  # Responses
        {"tools": [tool], "tool_choice": "auto"},
        {"response_format": {"type": "json_schema", "json_schema": {"name": "x" * 1000}}},
    ):
        assert prompt_bound({"messages": [{"role": "user", "content": "hi"}], **extra}, OPENAI) > bare + 200


def test_an_image_counts_its_providers_most_not_its_encoded_bytes() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 1_000_000}}
    body: dict[str, Any] = {"messages": [{"role": "user", "content": [{"type": "text", "text": "?"}, image]}]}
    text_only = prompt_bound({"messages": [{"role": "user", "content": [{"type": "text", "text": "?"}]}]}, [])
    assert prompt_bound(body, [("anthropic", "claude-sonnet-4-5")]) == text_only + 1_600
    assert prompt_bound(body, [("openai", "gpt-4o-mini")]) == text_only + 48_169
    # A call's hold covers every route it may fall back to: the dearest image among them.
    routes = [("anthropic", "claude-sonnet-4-5"), ("gemini", "gemini-2.0-flash")]
    assert prompt_bound(body, routes) == text_only + DEFAULT_IMAGE_TOKENS
    assert image_tokens([]) == 0


def test_responses_and_messages_images_are_images_too() -> None:
    responses = {
        "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}]
    }
    messages = {
        "messages": [{"role": "user", "content": [{"type": "image", "source": {"data": "A" * 9000}}]}]
    }
    for body in (responses, messages):
        assert 1_600 < prompt_bound(body, [("anthropic", "claude")]) < 1_600 + 200
