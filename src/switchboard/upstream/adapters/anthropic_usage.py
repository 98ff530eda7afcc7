"""Anthropic's usage object as the gateway's Usage, counted as litellm 1.106.0 counts it: the one
reader of Anthropic's usage, for the translated chat surface and the relayed Messages surface alike.

`prompt_tokens` is everything read: input + cache reads + cache writes (Anthropic's `input_tokens`
excludes both). Anthropic does not say how many output tokens were thinking unless it sends
`output_tokens_details.thinking_tokens`; otherwise, as litellm does, the thinking text is counted
with tiktoken's cl100k_base (litellm's default tokenizer, loaded from the copy litellm ships, never
downloaded) and capped at the output tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from switchboard.upstream.types import Usage
from switchboard.wire.tokens import count_tokens


def usage(raw: Mapping[str, Any], thinking: str | None) -> Usage:
    """`raw`: Anthropic's usage (merged over the stream's events); `thinking`: the answer's thinking text.

    A usage with `iterations` (several model passes in one answer) counts their sum."""
    iterations = raw.get("iterations")
    runs = (
        [it for it in iterations if isinstance(it, dict)]
        if isinstance(iterations, list) and iterations
        else [raw]
    )
    read = sum(_count(run, "cache_read_input_tokens") for run in runs)
    written = sum(_count(run, "cache_creation_input_tokens") for run in runs)
    # `cache_creation` splits the writes by lifetime; the one-hour ones are priced apart (SPEC §20).
    written_1h = min(sum(_count(_split(run), "ephemeral_1h_input_tokens") for run in runs), written)
    prompt = sum(_count(run, "input_tokens") for run in runs) + read + written
    completion = sum(_count(run, "output_tokens") for run in runs)
    reported = _thinking_tokens(raw)
    if runs[0] is not raw:
        found = [_thinking_tokens(run) for run in runs]
        if all(n is not None for n in found):
            reported = sum(n for n in found if n is not None)
    if reported is not None:
        reasoning = min(max(0, reported), completion)
    elif thinking:
        reasoning = min(count_tokens(thinking), completion)
    else:
        reasoning = 0
    tier = raw.get("service_tier")
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=read,
        reasoning_tokens=reasoning,
        cache_write_tokens=written,
        cache_write_1h_tokens=written_1h,
        service_tier=tier if isinstance(tier, str) and 0 < len(tier) <= 32 else None,
    )


def _split(run: Mapping[str, Any]) -> Mapping[str, Any]:
    found = run.get("cache_creation")
    return found if isinstance(found, dict) else {}


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _thinking_tokens(raw: Mapping[str, Any]) -> int | None:
    details = raw.get("output_tokens_details")
    value = details.get("thinking_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
