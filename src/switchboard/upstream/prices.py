"""Prices from litellm's cost map, per million tokens and per token class, for models neither the
economy nor the catalog prices."""

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


# The key suffix of the service tiers litellm's map prices apart (SPEC §20).
SERVICE_TIER_SUFFIXES = {"flex": "_flex", "priority": "_priority", "batch": "_batches"}
ABOVE_200K = "_above_200k_tokens"
PriceTable = dict[str, Decimal | None]


def _entry(provider: str, model: str) -> dict[str, Any] | None:
    cost_map = _cost_map()
    for key in (f"{provider}/{model}", model):
        entry = cost_map.get(key)
        if isinstance(entry, dict) and entry.get("litellm_provider") == provider:
            return entry
    return None


def litellm_price_table(
    provider: str, model: str, service_tier: str | None = None
) -> tuple[PriceTable, PriceTable | None] | None:
    """The model's per-million prices by SPEC §20's price keys, base tier and above 200k, as litellm's
    own cost function reads its map: a service tier's key where the map has one, else the standard
    key; a long-context key left out takes the class's base price; an hour's cache write left out
    takes the cache write price; a reasoning price only where the map states one. None: unknown."""
    entry = _entry(provider, model)
    if entry is None:
        return None
    suffix = SERVICE_TIER_SUFFIXES.get(service_tier or "", "")

    def rate(key: str, default: Decimal | None = None) -> Decimal | None:
        found = _per_million(entry.get(key + suffix)) if suffix else None
        found = found if found is not None else _per_million(entry.get(key))
        return default if found is None else found

    inp, out = rate("input_cost_per_token"), rate("output_cost_per_token")
    if inp is None and out is None:
        return None
    inp, out = inp or Decimal(0), out or Decimal(0)
    write = rate("cache_creation_input_token_cost")
    write_1h = _per_million(entry.get("cache_creation_input_token_cost_above_1hr"))
    # litellm's batch path prices every cache write at the batch write price: the map has no batch
    # price for one-hour writes.
    batch = suffix == SERVICE_TIER_SUFFIXES["batch"]
    write_1h = None if batch else write_1h
    read = rate("cache_read_input_token_cost")
    reasoning = _per_million(entry.get("output_cost_per_reasoning_token" + suffix)) if suffix else None
    if reasoning is None and not (suffix and entry.get("output_cost_per_token" + suffix) is not None):
        reasoning = _per_million(entry.get("output_cost_per_reasoning_token"))
    base: PriceTable = {
        "input_per_mtok": inp,
        "output_per_mtok": out,
        "cache_read_per_mtok": read,
        "cache_write_per_mtok": write,
        "cache_write_1h_per_mtok": write_1h if write_1h is not None else write,
        "reasoning_per_mtok": reasoning,
    }
    if rate("input_cost_per_token" + ABOVE_200K) is None:
        return base, None
    tier_write = rate("cache_creation_input_token_cost" + ABOVE_200K, write)
    tier_write_1h = (
        None if batch else rate("cache_creation_input_token_cost_above_1hr" + ABOVE_200K, write_1h)
    )
    above: PriceTable = {
        "input_per_mtok": rate("input_cost_per_token" + ABOVE_200K, inp),
        "output_per_mtok": rate("output_cost_per_token" + ABOVE_200K, out),
        "cache_read_per_mtok": rate("cache_read_input_token_cost" + ABOVE_200K, read),
        "cache_write_per_mtok": tier_write,
        "cache_write_1h_per_mtok": tier_write_1h if tier_write_1h is not None else tier_write,
        "reasoning_per_mtok": reasoning,
    }
    return base, above


def litellm_knows_cache_prices(provider: str, model: str) -> bool:
    """Whether litellm's map states a cache read or write price for the model (the start-up warning)."""
    entry = _entry(provider, model)
    return entry is not None and any(
        entry.get(key) is not None
        for key in ("cache_read_input_token_cost", "cache_creation_input_token_cost")
    )


# Every call under a limit asks (llm/call_attempt.model_max). The map is read once per process
# (`_cost_map`), so an answer never goes stale; bounded because a caller may name any model.
@functools.lru_cache(maxsize=4096)
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
