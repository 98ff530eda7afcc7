"""OpenAI chat messages as Anthropic's `system` and `messages`, turn by turn as litellm 1.106.0 builds them.

Anthropic keeps the system prompt apart, wants user and assistant turns to alternate, takes tool
results as `tool_result` blocks inside a user turn and tool calls as `tool_use` blocks, and refuses
empty text. So: the leading system (and developer) messages become `system`; consecutive user-side
messages (user, tool, function) merge into one user turn and consecutive assistant messages into one
assistant turn; a later system message becomes a user turn led by litellm's operator note; empty
text becomes litellm's placeholder. The client's messages are never changed in place.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from switchboard.errors import BadRequest
from switchboard.upstream.adapters import anthropic_media
from switchboard.wire.anthropic import arguments

Block = dict[str, Any]
EMPTY_TEXT = "[System: Empty message content sanitised to satisfy protocol]"
SYSTEM_NOTE = (
    "Operator note (not from the user): the following was originally a mid-conversation system-role reminder."
)
_USER_SIDE = frozenset(("user", "tool", "function"))
_TOOL_ROLES = frozenset(("tool", "function"))
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def convert(raw: object, renamed: Mapping[str, str]) -> tuple[list[Block], list[Block]]:
    """(system blocks, messages) for a chat body's `messages`; `renamed` maps tool names that had
    to change for Anthropic to their new spelling."""
    if not isinstance(raw, list) or not all(isinstance(m, dict) and "role" in m for m in raw):
        raise BadRequest("messages must be a list of objects with a role", param="messages")
    messages = [_as_system(m) if m["role"] == "developer" else m for m in raw]
    lead = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    system = [block for m in messages[:lead] for block in _system_blocks(m)]
    conversation = _place_later_system(messages[lead:])
    return system, _turns(conversation, renamed)


def _as_system(message: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "system", "content": message.get("content")}


def _system_blocks(message: Mapping[str, Any]) -> list[Block]:
    """The leading system prompt keeps each text and its cache_control; empty text is left out."""
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return []
        block: Block = {"type": "text", "text": content}
        if "cache_control" in message:
            block["cache_control"] = message["cache_control"]
        return [block]
    blocks: list[Block] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict) or part.get("type") != "text" or not part.get("text"):
            continue
        block = {"type": "text", "text": part["text"]}
        if "cache_control" in part:
            block["cache_control"] = part["cache_control"]
        blocks.append(block)
    return blocks


def _place_later_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A system message after the first turn becomes a user turn in place (prefixed by litellm's
    operator note); one caught between tool calls and their results moves behind the results, so
    that `tool_result` blocks still open the merged user turn."""
    if not any(m["role"] == "system" for m in messages):
        return messages
    placed: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []  # a system run waiting for the tool results that follow it
    for index, message in enumerate(messages):
        role = message["role"]
        if held and role not in _TOOL_ROLES and messages[index - 1]["role"] in _TOOL_ROLES:
            # the tool results the held system messages waited for are placed: now they follow
            placed.extend(turn for system in held for turn in _system_as_user(system))
            held = []
        if role != "system":
            placed.append(message)
            continue
        following = next((m["role"] for m in messages[index + 1 :] if m["role"] != "system"), None)
        if following in _TOOL_ROLES:
            held.append(message)
        else:
            placed.extend(_system_as_user(message))
    placed.extend(turn for system in held for turn in _system_as_user(system))
    return placed


def _system_as_user(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    parts: list[tuple[str, Any]] = []
    if isinstance(content, str):
        if content:
            parts.append((content, _ephemeral(message.get("cache_control"))))
    else:
        for part in content if isinstance(content, list) else []:
            text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else None
            if isinstance(text, str) and text:
                parts.append((text, _ephemeral(part.get("cache_control"))))
    if not parts:
        return []
    blocks: list[Block] = [{"type": "text", "text": SYSTEM_NOTE}]
    for text, cache in parts:
        blocks.append(
            {"type": "text", "text": text, "cache_control": cache}
            if cache
            else {"type": "text", "text": text}
        )
    return [{"role": "user", "content": blocks}]


def _ephemeral(cache_control: object) -> dict[str, str] | None:
    """cache_control in the only shape Anthropic takes ({type: ephemeral}, with a 5m or 1h ttl)."""
    if not isinstance(cache_control, dict) or cache_control.get("type") != "ephemeral":
        return None
    ttl = cache_control.get("ttl")
    return {"type": "ephemeral", "ttl": ttl} if ttl in ("5m", "1h") else {"type": "ephemeral"}


def _turns(messages: list[dict[str, Any]], renamed: Mapping[str, str]) -> list[Block]:
    if not messages:
        raise BadRequest("Anthropic requires at least one non-system message", param="messages")
    turns: list[Block] = []
    index = 0
    while index < len(messages):
        start = index
        user: list[Block] = []
        while index < len(messages) and messages[index]["role"] in _USER_SIDE:
            _user_side(messages[index], user)
            index += 1
        if user:
            turns.append({"role": "user", "content": user})
        assistant: list[Block] = []
        seen_ids: set[str] = set()  # a tool_use id twice in one turn is refused by Anthropic
        while index < len(messages) and messages[index]["role"] == "assistant":
            _assistant(messages[index], assistant, seen_ids, renamed)
            index += 1
        if assistant:
            turns.append({"role": "assistant", "content": assistant})
        if index == start:
            raise BadRequest(f"unsupported message role {messages[index]['role']!r}", param="messages")
    if turns[-1]["role"] == "assistant":  # Anthropic refuses a final assistant text ending in whitespace
        for block in turns[-1]["content"]:
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                block["text"] = block["text"].rstrip()
    return turns


def _cached(block: Block, source: Mapping[str, Any]) -> Block:
    cache_control = source.get("cache_control")
    if isinstance(cache_control, dict):
        block["cache_control"] = dict(cache_control)
    return block


def _filled(text: object) -> str:
    return text if isinstance(text, str) and text.strip() else EMPTY_TEXT


def _user_side(message: Mapping[str, Any], out: list[Block]) -> None:
    role = message["role"]
    if role != "user":
        out.append(_tool_result(message))
        return
    content = message.get("content")
    if isinstance(content, str):
        out.append(_cached({"type": "text", "text": _filled(content)}, message))
        return
    for part in content if isinstance(content, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            out.append(_cached({"type": "text", "text": _filled(part.get("text"))}, part))
        elif kind == "image_url":
            out.append(_cached(anthropic_media.image(part.get("image_url")), part))
        elif kind == "document":
            out.append(_cached(dict(part), part))
        elif kind == "file":
            out.append(_cached(anthropic_media.file(part.get("file")), part))
        # Other parts (input_audio, …) have no Anthropic form: litellm leaves them out too.


def _tool_result(message: Mapping[str, Any]) -> Block:
    content = message.get("content")
    result: Any = ""
    if isinstance(content, str):
        result = content
    elif isinstance(content, list):
        result = [part_block for part in content if (part_block := _tool_result_part(part)) is not None]
    call_id = message.get("tool_call_id")
    if message["role"] == "tool" and not isinstance(call_id, str):
        raise BadRequest("a tool message needs its tool_call_id", param="messages")
    block: Block = {
        "type": "tool_result",
        "tool_use_id": _tool_id(call_id or str(uuid.uuid4())),
        "content": result,
    }
    if message.get("cache_control") is not None:
        block["cache_control"] = message["cache_control"]
    return block


def _tool_result_part(part: object) -> Block | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "text":
        block: Block = {"type": "text", "text": part.get("text")}
        if part.get("cache_control") is not None:
            block["cache_control"] = part["cache_control"]
        return block
    if kind == "image_url":
        return _cached(anthropic_media.image(part.get("image_url"), documents=True), part)
    if kind == "file":
        return _cached(anthropic_media.file(part.get("file")), part)
    if kind == "tool_reference":
        return {"type": "tool_reference", "tool_name": part.get("tool_name")}
    return None


def _tool_id(raw: str) -> str:
    """Anthropic's tool ids are [a-zA-Z0-9_-]+: other characters become `_`, as litellm writes them."""
    return _BAD_ID_CHARS.sub("_", raw) or "tool_use_id"


def _assistant(
    message: Mapping[str, Any], out: list[Block], seen: set[str], renamed: Mapping[str, str]
) -> None:
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    inline_thinking = any(
        isinstance(p, dict) and p.get("type") in ("thinking", "redacted_thinking") for p in parts
    )
    thinking = message.get("thinking_blocks")
    if isinstance(thinking, list) and not inline_thinking:  # thinking has to come first
        out.extend(block for block in thinking if isinstance(block, dict) and _signed(block))
    if isinstance(content, str):  # empty text is refused: litellm sends its placeholder instead
        out.append(_cached({"type": "text", "text": _filled(content)}, message))
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "thinking" and part.get("thinking") and _signed(part):
            out.append(part)
        elif kind == "text":
            out.append(_cached({"type": "text", "text": _filled(part.get("text"))}, part))
        elif kind == "server_tool_use" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            out.append(part)
    for call in message.get("tool_calls") or []:
        if not isinstance(call, dict) or call.get("type") != "function":
            continue  # litellm keeps only function calls
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        name = function.get("name")
        call_id = _tool_id(str(call.get("id") or ""))
        if call_id in seen:
            continue
        seen.add(call_id)
        block: Block = {
            "type": "tool_use",
            "id": call_id,
            "name": renamed.get(name, name) if isinstance(name, str) else name,
            "input": arguments(function.get("arguments"), name),
        }
        out.append(_cached(block, call))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        name = legacy.get("name") or ""
        out.append(
            {
                "type": "tool_use",
                "id": str(uuid.uuid4()),
                "name": renamed.get(name, name),
                "input": arguments(legacy.get("arguments"), name),
            }
        )


def _signed(block: Mapping[str, Any]) -> bool:
    """Anthropic verifies thinking signatures: a thinking block without one, or without text, is refused."""
    if block.get("type") != "thinking":
        return True
    text, signature = block.get("thinking"), block.get("signature")
    return isinstance(signature, str) and bool(signature) and isinstance(text, str) and bool(text.strip())
