"""Prices from litellm's cost map, per million tokens, for models the catalog does not price."""

from __future__ import annotations

import functools
import importlib.util
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

# The map litellm itself uses when LITELLM_LOCAL_MODEL_COST_MAP is set (as upstream sets it).
# Reading the file costs ~30 ms once; importing litellm to reach the same dict costs ~2 s.
COST_MAP_FILE = "model_prices_and_context_window_backup.json"
_MILLION = Decimal(1_000_000)


@functools.cache
def _cost_map() -> dict[str, Any]:
    spec = importlib.util.find_spec("litellm")  # locates the package without importing it
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).with_name(COST_MAP_FILE)
    try:
        loaded = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def litellm_model_map() -> dict[str, Any]:
    """litellm's whole model map (capability flags, fallback rules), for the adapters to read only."""
    return _cost_map()


def _per_million(per_token: object) -> Decimal | None:
    if isinstance(per_token, bool) or not isinstance(per_token, int | float):
        return None
    value = Decimal(repr(per_token)) * _MILLION  # repr keeps the published digits (1.5e-07 → 0.15)
    return value.quantize(Decimal(1)) if value == value.to_integral_value() else value.normalize()


def litellm_prices(provider: str, model: str) -> tuple[Decimal, Decimal] | None:
    """(input, output) in currency units per million tokens, or None when litellm does not know it."""
    cost_map = _cost_map()
    for key in (f"{provider}/{model}", model):
        entry = cost_map.get(key)
        if not isinstance(entry, dict) or entry.get("litellm_provider") != provider:
            continue
        prices = (
            _per_million(entry.get("input_cost_per_token")),
            _per_million(entry.get("output_cost_per_token")),
        )
        if prices[0] is None and prices[1] is None:
            return None
        return prices[0] or Decimal(0), prices[1] or Decimal(0)
    return None


def litellm_max_output(provider: str, model: str) -> int | None:
    """The model's largest answer in tokens, as litellm's map knows it."""
    cost_map = _cost_map()
    for key in (f"{provider}/{model}", model):
        entry = cost_map.get(key)
        if not isinstance(entry, dict) or entry.get("litellm_provider") != provider:
            continue
        found = entry.get("max_output_tokens") or entry.get("max_tokens")
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            return found
    return None
