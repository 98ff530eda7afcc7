"""How deeply a parsed JSON value nests, found without recursion (a hostile body cannot exhaust the stack)."""

from __future__ import annotations

from typing import Any

# Containers deep that the gateway itself walks or re-encodes in a request's schemas and tool inputs.
# orjson encodes at most 255 levels and litellm refuses schemas over 100 levels of properties.
MAX_NESTING = 200


def deeper_than(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether `value` holds objects or arrays more than `limit` levels deep."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
