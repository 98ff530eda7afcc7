"""What litellm's model map says an Anthropic model can do, read as litellm 1.106.0 reads it.

The adapter asks the same questions litellm's Anthropic translation asks (may it think, take
`temperature`, answer in a JSON schema natively, ...) and must get the same answers, or the two
would send different requests. The map is read from litellm's packaged JSON (`prices.py`), never by
importing litellm. An unmapped id falls back on the map's own `fallback_generalizations` rules,
which is how litellm knows that `claude-opus-4-9` thinks adaptively before any entry names it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from switchboard.upstream.prices import litellm_max_output, litellm_model_map

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 4096  # litellm's DEFAULT_ANTHROPIC_CHAT_MAX_TOKENS, for a model the map lacks
_DATED = re.compile(r"-\d{8}$")
_DOTTED = re.compile(r"(\d)\.(\d)")
# Models that refuse sampling parameters, for entries older than the `supports_sampling_params` flag.
# fmt: off
_NO_SAMPLING_NAMES = (
    "fable", "opus-4-7", "opus_4_7", "opus-4.7", "opus_4.7", "opus-4-8", "opus_4_8", "opus-4.8", "opus_4.8",
)
# fmt: on


@dataclass(frozen=True)
class ModelTraits:
    max_output: int  # max_tokens sent when the client asks for no cap
    reasoning: bool  # takes `thinking` / `reasoning_effort` (litellm refuses them otherwise)
    adaptive_thinking: bool  # thinks by `output_config.effort`, not by a token budget
    legacy_thinking: bool  # an adaptive model that still accepts `thinking: {type: enabled}`
    thinking_always_on: bool  # refuses `thinking: {type: disabled}`
    native_json_schema: bool  # `output_format` instead of a forced tool for a json_schema
    sampling: bool  # accepts temperature (other than 1) and top_p
    forced_tool_use: bool  # accepts tool_choice any / tool
    effort_xhigh: bool
    effort_max: bool


@functools.lru_cache(maxsize=512)
def traits(model: str) -> ModelTraits:
    info = _model_info(model)
    adaptive = _flag(model, info, "supports_adaptive_thinking")
    sampling = _raw_flag(model, "supports_sampling_params")
    return ModelTraits(
        max_output=litellm_max_output(PROVIDER, model) or DEFAULT_MAX_TOKENS,
        reasoning="claude-3-7-sonnet" in model or adaptive or info.get("supports_reasoning") is True,
        adaptive_thinking=adaptive,
        legacy_thinking=_flag(model, info, "supports_legacy_thinking"),
        thinking_always_on=_flag(model, info, "thinking_always_on"),
        native_json_schema=_flag(model, info, "supports_native_structured_output"),
        sampling=sampling
        if sampling is not None
        else not any(n in model.lower() for n in _NO_SAMPLING_NAMES),
        forced_tool_use=_raw_flag(model, "supports_forced_tool_use") is not False,
        effort_xhigh=_flag(model, info, "supports_xhigh_reasoning_effort"),
        effort_max=adaptive or _flag(model, info, "supports_max_reasoning_effort"),
    )


def _entry(model_map: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    entry = model_map.get(key)
    return entry if isinstance(entry, dict) else None


def _model_info(model: str) -> Mapping[str, Any]:
    """The model's map entry, completed by the rules that fill gaps, or the rules alone when unmapped."""
    model_map = litellm_model_map()
    exact = next(
        (
            entry
            for key in (f"{PROVIDER}/{model}", model)
            if (entry := _entry(model_map, key)) is not None and entry.get("litellm_provider") == PROVIDER
        ),
        None,
    )
    rules = _rules()
    if exact is not None:
        filled: dict[str, Any] = {}
        for pattern, info, fill_for in rules:
            if PROVIDER in fill_for and pattern.search(model):
                filled.update((k, v) for k, v in info.items() if k != "litellm_provider")
        return {**filled, **exact}
    matched: dict[str, Any] = {}
    for pattern, info, _ in rules:
        if pattern.search(model):
            matched.update(info)
    return matched


def _flag(model: str, info: Mapping[str, Any], key: str) -> bool:
    """litellm's `_supports_model_capability`: the resolved entry's flag, else any alias's entry."""
    value = info.get(key)
    if isinstance(value, bool):
        return value
    return _raw_flag(model, key) is True


def _raw_flag(model: str, key: str) -> bool | None:
    """litellm's `_get_model_capability`: the flag on the entry of the id or of a plain alias of it
    (dated release suffix dropped, `4.6` spelled `4-6`), whatever provider the entry is for."""
    model_map = litellm_model_map()
    for candidate in dict.fromkeys((model, _DATED.sub("", model), _DOTTED.sub(r"\1-\2", model))):
        entry = _entry(model_map, candidate)
        if entry is not None and isinstance(entry.get(key), bool):
            return bool(entry[key])
    return None


@functools.cache
def _rules() -> tuple[tuple[re.Pattern[str], Mapping[str, Any], frozenset[str]], ...]:
    """The map's capability rules (routing-only rules, which name just a provider, left out)."""
    block = litellm_model_map().get("fallback_generalizations")
    raw = block.get("rules") if isinstance(block, dict) else None
    compiled = []
    for rule in raw if isinstance(raw, list) else []:
        if not isinstance(rule, dict):
            continue
        pattern, info = rule.get("pattern"), rule.get("model_info")
        if not isinstance(pattern, str) or not isinstance(info, dict) or set(info) <= {"litellm_provider"}:
            continue
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error:
            continue
        fill_for = rule.get("fill_missing_for_providers")
        compiled.append((regex, info, frozenset(fill_for) if isinstance(fill_for, list) else frozenset()))
    return tuple(compiled)
