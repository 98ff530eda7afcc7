"""The most prompt tokens a provider can bill for a request: what a limit's reservation holds (SPEC §13).

An estimate at four characters a token (llm/outcomes.py) is right for English and wrong by 4x for
Chinese or Japanese, which real tokenizers bill at about one token a character; a reservation below
the bill lets concurrent calls overspend a limit. So the reservation takes a bound that holds for any
tokenizer rather than an estimate:

- text: its UTF-8 byte length. Byte-level BPE (OpenAI, Anthropic, Llama) and SentencePiece with byte
  fallback (Gemini, Gemma, Mistral) never make a token of less than one byte; one more token a string
  covers a tokenizer's word-start marker. Every text the provider reads counts: messages (tool calls
  and results included), `system`, `instructions`, `input`, `prompt`; tool definitions and response
  schemas as their JSON (their keys are rendered into the prompt too).
- framing: MESSAGE_TOKENS a message or input item (role and turn markers), REQUEST_TOKENS a request
  (start of text, the answer's priming), TOOLS_TOKENS when tools are offered (the system prompt a
  provider adds for tool use: Anthropic documents up to 530 tokens).
- an image: what its provider bills at most for one image, whatever its size (`image_tokens`); a
  document or file counts its encoded bytes as text and one image.

The model's own tokenizer would be tighter for English, but it is not available offline for most
models (litellm ships only cl100k_base) and would cost a tokenizer pass on every limited call; the
bound is one walk over the request's strings, and the call settles at what the provider billed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

MESSAGE_TOKENS = 8
REQUEST_TOKENS = 32
TOOLS_TOKENS = 600

# The most one image costs, from each provider's documentation:
# - OpenAI: tiles of an image scaled within 2048x2048 then to 768 on its short side (at most 8 tiles):
#   gpt-4o, gpt-4.1 85 + 8 x 170 = 1,445; o1/o3 75 + 8 x 150 = 1,275; gpt-4.1-mini/nano and o4-mini at
#   most 1,536 patches times 1.62/2.46/1.72 = 3,779; gpt-4o-mini bills tiles at 33x the rate so that an
#   image costs what it costs on gpt-4o: 2,833 + 8 x 5,667 = 48,169 (named on its own).
# - Anthropic: (width x height) / 750 after scaling within 1.15 megapixels: about 1,600.
# - Gemini and the long tail: Gemini 2 bills 258 tokens a 768x768 tile without a documented largest
#   image; 16,512 is a 6144x6144 image (64 tiles). A chosen bound, not a documented one.
_IMAGE_TOKENS = {"openai": 3_779, "azure": 3_779, "anthropic": 1_600, "bedrock": 1_600}
_IMAGE_TOKENS_BY_MODEL = {"gpt-4o-mini": 48_169}
DEFAULT_IMAGE_TOKENS = 16_512

# Content parts that are images, in each request family (chat, Responses, Messages).
_IMAGES = frozenset({"image_url", "input_image", "image"})
# Parts that carry a document or a file: their bytes count as text, plus one image (a PDF page).
_FILES = frozenset({"file", "input_file", "document"})

# What each field of a request counts as (`_WALKED`: its strings; `_AS_JSON`: its JSON); the body
# is walked by its own keys, fewer than these on most calls.
_WALKED = frozenset({"messages", "system", "instructions", "input", "prompt"})
_FRAMED = frozenset({"messages", "input"})  # a list of messages or items: each framed
_AS_JSON = frozenset({"tools", "functions", "response_format", "text", "tool_choice"})
_TOOLS = frozenset({"tools", "functions"})


def image_tokens(models: Iterable[tuple[str, str]]) -> int:
    """The most one image costs on any of `models` ((provider, model) pairs: a call's routes)."""
    bounds = [0]
    for provider, model in models:
        by_model = next((n for name, n in _IMAGE_TOKENS_BY_MODEL.items() if name in model), None)
        bounds.append(by_model or _IMAGE_TOKENS.get(provider, DEFAULT_IMAGE_TOKENS))
    return max(bounds)


def prompt_bound(body: dict[str, Any], models: Iterable[tuple[str, str]]) -> int:
    """The most prompt tokens any of `models` can bill for `body` (see the module's docstring)."""
    total, images, tools = REQUEST_TOKENS, 0, False
    for name, value in body.items():
        if name in _WALKED:
            if value is None:
                continue
            if name in _FRAMED and isinstance(value, list):
                total += MESSAGE_TOKENS * sum(isinstance(item, dict) for item in value)
            size, found = _size(value)
            total, images = total + size, images + found
        elif name in _AS_JSON and value:  # no tools, no schema: nothing to render
            total += len(orjson.dumps(value))
            tools = tools or name in _TOOLS
    if tools:
        total += TOOLS_TOKENS
    if images:
        total += images * image_tokens(models)
    return total


def _size(value: Any) -> tuple[int, int]:
    """(text bytes plus one a string, images) in `value`: every string, a dict's keys included.

    Strings, most of what a request holds, are counted in the loop rather than by a call each
    (`isascii()` reads a flag: an ASCII string's length is its UTF-8 size, without a copy)."""
    size = images = 0
    if isinstance(value, dict):
        kind = value.get("type")
        if kind in _IMAGES:
            return 0, 1
        if kind in _FILES:
            images = 1
        for key, item in value.items():
            # keys too: an Anthropic tool call's `input` is an object, rendered as JSON
            size += len(key) if key.isascii() else len(key.encode())
            if type(item) is str:
                size += (len(item) if item.isascii() else len(item.encode())) + 1
            elif item is not None:
                more, found = _size(item)
                size, images = size + more, images + found
    elif isinstance(value, list):
        for item in value:
            if type(item) is str:
                size += (len(item) if item.isascii() else len(item.encode())) + 1
            else:
                more, found = _size(item)
                size, images = size + more, images + found
    elif isinstance(value, str):
        size = _utf8(value) + 1
    elif isinstance(value, int | float) and not isinstance(value, bool):
        size = len(repr(value))  # a number in a tool call's arguments, a token id in `prompt`
    return size, images


def _utf8(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())  # isascii() reads a flag: no copy
