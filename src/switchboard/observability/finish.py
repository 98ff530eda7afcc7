"""An answer's finish reasons (`gen_ai.response.finish_reasons`), read only while tracing is on.

OpenAI-format answers (every chat provider's, as the upstream layer hands them on, and text
completions) say one `finish_reason` per choice; a stream says it in the chunk that ends each
choice. Nothing here runs unless events.py found tracing on, so a gateway that does not trace never
looks twice at an answer. The native relays (upstream/native.py) read their own formats' reasons
where they already parse the events that carry them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# A choice's finish_reason that is a string, not null: the one chunk per choice worth a parse.
SAID = re.compile(rb'"finish_reason"\s*:\s*"')


def of_choices(body: bytes) -> list[str]:
    """A non-streamed answer's reasons, in choice order ([] when it names none)."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    found: dict[int, str] = {}
    take(payload, found)
    return ordered(found)


def take(payload: Any, found: dict[int, str]) -> None:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list):
        return
    for position, choice in enumerate(choices):
        if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str):
            index = choice.get("index")
            found[index if isinstance(index, int) else position] = choice["finish_reason"]


def ordered(found: dict[int, str]) -> list[str]:
    return [found[index] for index in sorted(found)]
