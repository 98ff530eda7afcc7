"""Exact call costs: SPEC §6's price order, the economy's markup, one half-up rounding to nano-units."""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from switchboard.config_file import ModelEntry, PriceOverride

log = logging.getLogger("switchboard.metering.pricing")

_BPS = 10_000


@dataclass(frozen=True)
class Prices:
    """Per-million-token prices in currency units; None where no source knows the side."""

    input_per_mtok: Decimal | None
    output_per_mtok: Decimal | None
    source: str | None

    # A price list is read once and priced against on every call: its exact ratios and texts are
    # worked out on first use.
    @functools.cached_property
    def ratios(self) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        inp, out = self.input_per_mtok, self.output_per_mtok
        return (
            inp.as_integer_ratio() if inp is not None else None,
            out.as_integer_ratio() if out is not None else None,
        )

    @functools.cached_property
    def texts(self) -> tuple[str | None, str | None]:
        return _text(self.input_per_mtok), _text(self.output_per_mtok)


@dataclass(frozen=True)
class Cost:
    nanos: int
    priced: bool
    input_per_mtok: str | None
    output_per_mtok: str | None
    markup_bps: int
    source: str | None


UNKNOWN = Prices(None, None, None)


def _decimal(value: object) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        # str() first: a float's repr is the short decimal people wrote, its binary value is not.
        parsed = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return parsed if parsed.is_finite() and parsed >= 0 else None


def _pair(value: object) -> tuple[Decimal | None, Decimal | None]:
    """Read (input, output) from whatever shape a price source hands over."""
    if value is None:
        return None, None
    if isinstance(value, tuple) and len(value) == 2:
        return _decimal(value[0]), _decimal(value[1])
    if isinstance(value, Mapping):
        return _decimal(value.get("input_per_mtok")), _decimal(value.get("output_per_mtok"))
    return _decimal(getattr(value, "input_per_mtok", None)), _decimal(getattr(value, "output_per_mtok", None))


def litellm_lookup(provider: str, model: str) -> Prices:
    """litellm's cost map, via the upstream domain (the only code that imports litellm)."""
    try:
        # Looked up by name: the upstream domain may be built without it (then: unknown).
        prices_module = importlib.import_module("switchboard.upstream.prices")
    except ImportError:
        return UNKNOWN
    try:
        found = prices_module.litellm_prices(provider, model)
    except Exception:  # a broken cost-map entry must not lose the record: the call is unpriced
        log.warning("litellm price lookup failed for %s/%s", provider, model)
        return UNKNOWN
    inp, out = _pair(found)
    return Prices(inp, out, "litellm" if inp is not None or out is not None else None)


def find_prices(
    provider: str,
    model: str,
    overrides: Mapping[str, PriceOverride],
    catalog: Mapping[str, ModelEntry],
    litellm: Prices = UNKNOWN,
) -> Prices:
    """Each side from the first source that names it: economy override, catalog, litellm's map."""
    key = f"{provider}/{model}"
    sources: list[tuple[str, tuple[Decimal | None, Decimal | None]]] = [
        ("override", _pair(overrides.get(key))),
        ("catalog", _pair(catalog.get(key))),
        ("litellm", (litellm.input_per_mtok, litellm.output_per_mtok)),
    ]
    found: list[Decimal | None] = [None, None]
    used: list[str] = []
    for name, pair in sources:
        for side in (0, 1):
            if found[side] is None and pair[side] is not None:
                found[side] = pair[side]
                if name not in used:
                    used.append(name)
    return Prices(found[0], found[1], "+".join(used) or None)


def needs_litellm(prices: Prices) -> bool:
    return prices.input_per_mtok is None or prices.output_per_mtok is None


def compute_cost(prices: Prices, prompt_tokens: int, completion_tokens: int, markup_bps: int) -> Cost:
    """cost = (prompt * input + completion * output) / 1e6 * (1 + bps/1e4), in nano-units, half-up once.

    Unpriced (cost 0, `priced` false) when no price is known, or when a side that has tokens has no
    price: a partial sum would be a silent undercount.
    """
    nanos = cost_nanos(prices, prompt_tokens, completion_tokens, markup_bps)
    inp, out = prices.texts
    return Cost(nanos or 0, nanos is not None, inp, out, markup_bps, prices.source)


def cost_nanos(prices: Prices, prompt_tokens: int, completion_tokens: int, markup_bps: int) -> int | None:
    """`compute_cost`'s nano-units alone; None when the call is unpriced."""
    inp, out = prices.ratios
    if (
        (inp is None and out is None)
        or (prompt_tokens > 0 and inp is None)
        or (completion_tokens > 0 and out is None)
    ):
        return None
    # A fraction of integers, exact at any size (Decimal.as_integer_ratio is exact), in a fraction of
    # the time Decimal arithmetic takes: every record pays for this.
    numerator, denominator = 0, 1
    for tokens, ratio in ((prompt_tokens, inp), (completion_tokens, out)):
        if tokens and ratio is not None:
            top, bottom = ratio
            numerator, denominator = numerator * bottom + tokens * top * denominator, denominator * bottom
    # x 1e9 nanos per unit / 1e6 tokens per mtok = x 1000, then x (1e4 + bps) / 1e4: x (1e4 + bps) / 10.
    return _round_half_up(numerator * (_BPS + markup_bps), denominator * 10)


def largest_completion_within(
    prices: Prices, prompt_tokens: int, markup_bps: int, budget: int, upper: int
) -> int:
    """The largest completion (≤ `upper`) whose `compute_cost` with `prompt_tokens` is ≤ `budget`
    nano-units; -1 when not even the prompt alone fits. Both sides must be priced.

    Solved in integers from `compute_cost`'s formula, not searched: the limits pay this on every call.
    cost(c) = round_half_up(x(c)) ≤ budget ⟺ x(c) < budget + ½, with x(c) = (p·in + c·out)·M / 10,
    M = 1e4 + bps, in and out the exact ratios of the per-million prices.
    """
    inp, out = prices.ratios
    assert inp is not None and out is not None
    a, b = inp if prompt_tokens else (0, 1)
    c, d = out
    scale = _BPS + markup_bps
    # 2·(p·a·d + k·c·b)·M < (2·budget + 1)·b·d·10, for the completion k.
    room = (2 * budget + 1) * b * d * 10 - 2 * prompt_tokens * a * d * scale
    if room <= 0:
        return -1
    step = 2 * c * b * scale
    if step <= 0:
        return upper  # output is free: any answer fits
    return min((room - 1) // step, upper)


def _round_half_up(numerator: int, denominator: int) -> int:
    """numerator / denominator (> 0) to an integer, halves away from zero (Decimal's ROUND_HALF_UP)."""
    magnitude = (2 * abs(numerator) + denominator) // (2 * denominator)
    return magnitude if numerator >= 0 else -magnitude


def _text(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")
