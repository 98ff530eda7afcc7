"""OpenAI's usage reader, the one every surface uses (SPEC §20): chat's `prompt_tokens_details` and
the Responses API's `input_tokens_details` alike, and the answer's `service_tier`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from switchboard.upstream.types import Usage


def openai_usage(raw: Mapping[str, Any], service_tier: object = None) -> Usage:
    """`raw`: a chat `usage` (prompt_/completion_tokens) or a Responses one (input_/output_tokens);
    `service_tier`: the answer's top-level field. Nulls read as 0, extra fields are ignored."""
    if "input_tokens" in raw and "prompt_tokens" not in raw:
        prompt, completion = _int(raw.get("input_tokens")), _int(raw.get("output_tokens"))
        prompt_details, output_details = raw.get("input_tokens_details"), raw.get("output_tokens_details")
    else:
        prompt, completion = _int(raw.get("prompt_tokens")), _int(raw.get("completion_tokens"))
        prompt_details = raw.get("prompt_tokens_details")
        output_details = raw.get("completion_tokens_details")
    # OpenAI bills no cache writes: the only input class apart from the plain one is cache reads.
    cached = _detail(prompt_details, "cached_tokens")
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=min(cached, prompt),
        reasoning_tokens=min(_detail(output_details, "reasoning_tokens"), completion),
        service_tier=tier_name(service_tier),
    )


def tier_name(value: object) -> str | None:
    """The answer's service tier, kept when it is a short name (it goes into the record)."""
    return value if isinstance(value, str) and 0 < len(value) <= 32 else None


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def _detail(details: object, key: str) -> int:
    return _int(details.get(key)) if isinstance(details, Mapping) else 0
