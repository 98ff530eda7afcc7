"""A Messages request's input tokens counted by the gateway, for a model no `anthropic` credential
answers (SPEC §16, `count_tokens`): no provider is asked and no completion runs.

Text is counted with tiktoken's cl100k_base where it can be had (the tokenizer the Anthropic adapter
already counts thinking with, from the copy litellm ships), else at four characters a token, as the
limits estimate. What text there is: the system prompt, every text block, each tool call's name and
input, each tool result's text, and each tool's name, description and schema. An image or a document
that is not text counts as IMAGE_TOKENS, its size unread: the most one image costs at Anthropic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from switchboard.wire.tokens import count_tokens

IMAGE_TOKENS = 1600
# A few tokens of framing per message (role and turn markers), as chat formats spend.
MESSAGE_TOKENS = 3


def count_input_tokens(body: Mapping[str, Any]) -> int:
    texts: list[str] = []
    media = 0
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts.extend(str(b.get("text") or "") for b in system if isinstance(b, dict))
    messages = body.get("messages") or []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            media += _blocks(content, texts)
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            texts.append(str(tool.get("name") or ""))
            texts.append(str(tool.get("description") or ""))
            if tool.get("input_schema") is not None:
                texts.append(orjson.dumps(tool["input_schema"]).decode())
    counted = count_tokens("\n".join(text for text in texts if text)) if any(texts) else 0
    return counted + media * IMAGE_TOKENS + MESSAGE_TOKENS * len(messages)


def _blocks(blocks: list[Any], texts: list[str]) -> int:
    """Appends the blocks' text to `texts`; returns how many images and binary documents they hold."""
    media = 0
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            texts.append(str(block.get("name") or ""))
            texts.append(orjson.dumps(block.get("input") or {}).decode())
        elif kind == "tool_result":
            content = block.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                media += _blocks(content, texts)
        elif kind == "thinking":
            texts.append(str(block.get("thinking") or ""))
        elif kind in ("image", "document"):
            source = block.get("source")
            if isinstance(source, dict) and source.get("type") == "text":
                texts.append(str(source.get("data") or ""))
            else:
                media += 1
    return media
