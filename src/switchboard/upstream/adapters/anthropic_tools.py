"""OpenAI tools, tool_choice and web_search_options as Anthropic's, named as Anthropic allows.

Anthropic tool names must match ^[a-zA-Z0-9_-]{1,128}$. A name that does not is rewritten (bad
characters to `_`, a `_2`, `_3`… suffix when two would collide), in the tools, the tool_choice and the
replayed tool calls alike; answers carry the client's own names again (`ReplyContext.tool_names`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from switchboard.errors import BadRequest
from switchboard.upstream.adapters import anthropic_schema
from switchboard.wire.anthropic import TOOL_CHOICE_TYPES

Block = dict[str, Any]
_BAD_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 128
# Anthropic's server tools, passed on as written (litellm's ANTHROPIC_HOSTED_TOOLS prefixes).
HOSTED_PREFIXES = (
    "web_search",
    "bash",
    "text_editor",
    "code_execution",
    "web_fetch",
    "memory",
    "tool_search_tool",
)
WEB_SEARCH_TOOL = "web_search_20250305"
WEB_SEARCH_USES = {"low": 1, "medium": 5, "high": 10}  # search_context_size → max_uses
LOCATION_KEYS = ("city", "country", "region", "timezone")
# OpenAI's tool_choice strings as Anthropic's types; the Messages surface (surfaces/) reads it backwards.
DUMMY_TOOL: Block = {
    "type": "function",
    "function": {
        "name": "dummy_tool",
        "description": "This is a dummy tool call",
        "parameters": {"type": "object", "properties": {}},
    },
}


def tools(raw: object) -> list[Block]:
    if not isinstance(raw, list):
        raise BadRequest("tools must be a list", param="tools")
    return [_tool(tool) for tool in raw]


def _tool(tool: object) -> Block:
    if not isinstance(tool, dict):
        raise BadRequest("each tool must be an object", param="tools")
    if "input_schema" in tool:  # already Anthropic's shape
        return tool
    kind = tool.get("type")
    if kind in ("function", "custom"):
        function = tool.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest("a function tool needs function.name", param="tools")
        block: Block = {
            "name": function["name"],
            "input_schema": anthropic_schema.input_schema(function.get("parameters")),
            "type": "custom",
        }
        if function.get("description") is not None:
            block["description"] = function["description"]
        cache_control = tool.get("cache_control")
        if cache_control is None and isinstance(function.get("cache_control"), dict):
            cache_control = dict(function["cache_control"])
        if cache_control is not None:
            block["cache_control"] = cache_control
        return block
    if isinstance(kind, str) and kind.startswith(HOSTED_PREFIXES):
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if not isinstance(name, str):
            raise BadRequest(f"a {kind} tool needs a name", param="tools")
        return {**tool, "name": name}
    raise BadRequest(f"unsupported tool type {kind!r} for an Anthropic model", param="tools")


def web_search(options: Mapping[str, Any]) -> Block:
    tool: Block = {"type": WEB_SEARCH_TOOL, "name": "web_search"}
    location = options.get("user_location")
    approximate = location.get("approximate") if isinstance(location, dict) else None
    if isinstance(location, dict):
        found = approximate if isinstance(approximate, dict) else {}
        tool["user_location"] = {"type": "approximate", **{k: found[k] for k in LOCATION_KEYS if k in found}}
    size = options.get("search_context_size")
    if size is not None:
        if size not in WEB_SEARCH_USES:
            raise BadRequest("search_context_size must be low, medium or high", param="web_search_options")
        tool["max_uses"] = WEB_SEARCH_USES[size]
    return tool


def tool_choice(choice: object, parallel: object) -> Block | None:
    """litellm's `_map_tool_choice`: auto/none/required(any)/a named function, and
    `parallel_tool_calls` as its inverse `disable_parallel_tool_use`."""
    mapped: Block | None = None
    if isinstance(choice, str) and choice in TOOL_CHOICE_TYPES:
        mapped = {"type": TOOL_CHOICE_TYPES[choice]}
    elif isinstance(choice, dict):
        if "type" in choice and "function" not in choice:
            kind = choice.get("type")
            if kind in ("auto", "none"):
                mapped = {"type": kind}
            elif kind in ("required", "any"):
                mapped = {"type": "any"}
        else:
            function = choice.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            if name is not None:
                mapped = {"type": "tool", "name": name}
    if parallel is not None and choice != "none":
        if mapped is None:
            mapped = {"type": "auto"}
        mapped["disable_parallel_tool_use"] = not parallel
    return mapped


def safe_names(anthropic_tools: list[Block]) -> dict[str, str]:
    """{client's name: name sent} for the function tools whose names Anthropic would refuse."""
    names = [
        t["name"] for t in anthropic_tools if t.get("type") == "custom" and isinstance(t.get("name"), str)
    ]
    used = {name for name in names if name and _basic(name) == name}  # valid names keep their slot
    renamed: dict[str, str] = {}
    for name in names:
        candidate = _basic(name)
        if not name or candidate == name or name in renamed:
            continue
        unique, n = candidate, 1
        while unique in used:
            n += 1
            suffix = f"_{n}"
            unique = candidate[: MAX_NAME - len(suffix)] + suffix
        renamed[name] = unique
        used.add(unique)
    return renamed


def _basic(name: str) -> str:
    return _BAD_NAME_CHARS.sub("_", name)[:MAX_NAME]


def rename(anthropic_tools: list[Block], choice: Block | None, renamed: Mapping[str, str]) -> None:
    """Applies `renamed` to the (already copied) tools and tool_choice."""
    for index, tool in enumerate(anthropic_tools):
        if tool.get("type") == "custom" and tool.get("name") in renamed:
            anthropic_tools[index] = {**tool, "name": renamed[tool["name"]]}
    if choice is not None and choice.get("type") == "tool" and choice.get("name") in renamed:
        choice["name"] = renamed[choice["name"]]
