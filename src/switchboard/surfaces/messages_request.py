"""Anthropic Messages requests (SPEC §16): the checks every call gets, and the request run the other
way through the Anthropic adapter's mapping, as an OpenAI chat body for a provider of another kind.

The adapter (upstream/adapters/anthropic_*) turns OpenAI chat into Anthropic Messages; this module
turns Anthropic Messages into OpenAI chat: `system` becomes the leading system message, `tool_use`
blocks become `tool_calls` (ids kept), `tool_result` blocks become `tool` messages placed right after
the call they answer, images become `image_url` parts, and `tool_choice {type: any}` becomes
`required`. What no OpenAI-format provider can take is left out: thinking blocks (their signatures
mean nothing elsewhere), `cache_control`, `top_k`, and Anthropic's server tools (web search, code
execution…), which only Anthropic runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.datastructures import Headers

from switchboard.errors import BadRequest
from switchboard.kit.nesting import MAX_NESTING, deeper_than
from switchboard.wire.anthropic import TOOL_CHOICE_TYPES

Block = dict[str, Any]
# Client headers an `anthropic` provider must see; the caller's own credential never goes along.
PASSED_HEADERS = ("anthropic-version", "anthropic-beta")
DEFAULT_VERSION = "2023-06-01"
# Anthropic's tool_choice type → OpenAI's string: the adapter's table read backwards.
_CHOICES = {anthropic: openai for openai, anthropic in TOOL_CHOICE_TYPES.items()}
# `system` mid-conversation: Anthropic's beta `mid-conversation-system-2026-04-07`, which Claude Code sends.
_ROLES = frozenset(("user", "assistant", "system"))


def check_messages_body(body: dict[str, Any]) -> bool:
    """What every call needs, whatever answers it (Anthropic's own 400s); returns whether it streams."""
    check_count_body(body)
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest("max_tokens: a positive integer is required", param="max_tokens")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("stream: must be a boolean", param="stream")
    return bool(stream)


def check_count_body(body: dict[str, Any]) -> None:
    """What /v1/messages/count_tokens needs: a model and a conversation (no output cap)."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("model: Field required", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: at least one message is required", param="messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise BadRequest(
                f"messages.{index}: each message needs a role of `user`, `assistant` or `system`",
                param="messages",
            )
        if not isinstance(message.get("content"), str | list):
            raise BadRequest(f"messages.{index}.content: a string or a list of blocks", param="messages")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise BadRequest("system: a string or a list of text blocks", param="system")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise BadRequest("tools: a list of tools", param="tools")
    # What the gateway re-encodes or walks when it translates or counts: bounded, never a 500.
    for tool in tools or ():
        if isinstance(tool, dict) and deeper_than(tool.get("input_schema")):
            raise BadRequest(f"tools: an input_schema nests over {MAX_NESTING} levels deep", param="tools")
    for index, message in enumerate(messages):
        content = message["content"]
        if isinstance(content, list) and any(
            isinstance(block, dict) and deeper_than(block.get("input")) for block in content
        ):
            raise BadRequest(
                f"messages.{index}.content: a tool_use input nests over {MAX_NESTING} levels deep",
                param="messages",
            )


def provider_headers(headers: Headers) -> bytes:
    """The header lines relayed to an `anthropic` credential: the client's API version and betas."""
    lines = b""
    for name in PASSED_HEADERS:
        value = headers.get(name)
        if name == "anthropic-version" and not value:
            value = DEFAULT_VERSION  # Anthropic refuses a call without one; the SDKs always send it
        if value:
            if "\r" in value or "\n" in value:
                raise BadRequest(f"the {name} header is malformed", param=name)
            lines += name.encode() + b": " + value.encode("latin-1") + b"\r\n"
    return lines


def from_agent(body: dict[str, Any]) -> dict[str, Any]:
    """An `agent:` selector's body back in Anthropic's shape: the agent puts its instructions first as
    an OpenAI system message (agents/apply.py), which Anthropic takes as `system`."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return body
    first = messages[0]
    body = {key: value for key, value in body.items() if key != "reasoning_effort"}
    if isinstance(first, dict) and first.get("role") == "system":
        body["messages"] = messages[1:]
        system = body.get("system")
        lead = {"type": "text", "text": str(first.get("content") or "")}
        if isinstance(system, str) and system:
            body["system"] = [lead, {"type": "text", "text": system}]
        elif isinstance(system, list):
            body["system"] = [lead, *system]
        else:
            body["system"] = [lead]
    return body


def chat_body(body: Mapping[str, Any], model_max: int | None = None) -> dict[str, Any]:
    """The OpenAI chat request that stands in for a Messages request on a provider of another kind.

    `model_max`: the target model's largest answer, when known. Anthropic clients ask for what a
    Claude model can give (Claude Code: 32,000 tokens), which a smaller model's API refuses outright;
    the cap is lowered to what the model can give instead.
    """
    chat: dict[str, Any] = {"model": body.get("model")}
    messages: list[Block] = []
    system = _system_text(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    for message in body.get("messages") or []:
        if message["role"] == "user":
            messages.extend(_user_turn(message["content"]))
        elif message["role"] == "system":
            messages.append({"role": "system", "content": _system_text(message["content"])})
        else:
            messages.append(_assistant_turn(message["content"]))
    chat["messages"] = messages
    cap = body["max_tokens"]
    chat["max_completion_tokens"] = min(cap, model_max) if model_max else cap
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            chat[name] = body[name]
    stops = body.get("stop_sequences")
    if isinstance(stops, list) and stops:
        chat["stop"] = stops
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        chat["user"] = metadata["user_id"]
    tools = [_tool(tool) for tool in body.get("tools") or [] if _is_custom(tool)]
    if tools:
        chat["tools"] = tools
        _tool_choice(body.get("tool_choice"), chat)
    if body.get("stream"):
        chat["stream"] = True
    return chat


def _system_text(system: object) -> str:
    if isinstance(system, str):
        return system
    texts = [b.get("text") for b in system if isinstance(b, dict)] if isinstance(system, list) else []
    return "\n".join(text for text in texts if isinstance(text, str) and text)


def _user_turn(content: str | list[Any]) -> list[Block]:
    """One Anthropic user turn: its tool results first (each a `tool` message), then the rest."""
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    results: list[Block] = []
    parts: list[Block] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            tool, images = _tool_result(block)
            results.append(tool)
            parts.extend(images)  # OpenAI's tool messages take text only: images follow as user content
        elif kind == "text":
            parts.append({"type": "text", "text": block.get("text") or ""})
        elif kind in ("image", "document"):
            parts.append(_media(block))
        # thinking, server tool results and the like have no OpenAI form
    turn = list(results)
    if parts:
        turn.append({"role": "user", "content": parts})
    return turn


def _tool_result(block: Mapping[str, Any]) -> tuple[Block, list[Block]]:
    content = block.get("content")
    images: list[Block] = []
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text") or ""))
            elif isinstance(part, dict) and part.get("type") in ("image", "document"):
                images.append(_media(part))
        text = "\n".join(texts)
    else:
        text = content if isinstance(content, str) else ""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest("a tool_result block needs its tool_use_id", param="messages")
    return {"role": "tool", "tool_call_id": call_id, "content": text}, images


def _media(block: Mapping[str, Any]) -> Block:
    source = block.get("source")
    if not isinstance(source, dict):
        raise BadRequest(f"an {block.get('type')} block needs a source", param="messages")
    kind = source.get("type")
    if kind == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif kind == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    elif kind == "text" and block.get("type") == "document":
        return {"type": "text", "text": str(source.get("data") or "")}
    else:
        raise BadRequest(f"a {kind} source can only be given to an Anthropic model", param="messages")
    if block.get("type") == "image":
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"file_data": url}}


def _assistant_turn(content: str | list[Any]) -> Block:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts: list[str] = []
    calls: list[Block] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            arguments = orjson.dumps(block.get("input") if block.get("input") is not None else {})
            calls.append(
                {
                    "id": block.get("id"),
                    "type": "function",
                    "function": {"name": block.get("name"), "arguments": arguments.decode()},
                }
            )
    message: Block = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _is_custom(tool: object) -> bool:
    """A tool the client runs (no `type`, or `custom`); Anthropic's server tools are left out."""
    if not isinstance(tool, dict):
        raise BadRequest("each tool must be an object", param="tools")
    return tool.get("type") in (None, "custom")


def _tool(tool: Mapping[str, Any]) -> Block:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("each tool needs a name", param="tools")
    function: Block = {"name": name, "parameters": tool.get("input_schema") or {"type": "object"}}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice: object, chat: dict[str, Any]) -> None:
    if not isinstance(choice, dict):
        return
    kind = choice.get("type")
    if kind == "tool" and isinstance(choice.get("name"), str):
        chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    elif kind in _CHOICES:
        chat["tool_choice"] = _CHOICES[kind]
    if choice.get("disable_parallel_tool_use") is True and kind != "none":
        chat["parallel_tool_calls"] = False
