"""Exact call costs (SPEC §20): a price per token class, the long-context tier, SPEC §6's price order,
the economy's markup, one half-up rounding to nano-units."""

from __future__ import annotations

import functools
import importlib
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Protocol

import orjson

log = logging.getLogger("switchboard.metering.pricing")

_BPS = 10_000
# The token classes in the order `Rates.values` holds them; each has a `<class>_per_mtok` price key.
CLASSES = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning")
PRICE_KEYS = tuple(f"{name}_per_mtok" for name in CLASSES)
INPUT, OUTPUT, CACHE_READ, CACHE_WRITE, CACHE_WRITE_1H, REASONING = range(len(CLASSES))
# Above this many prompt tokens a source's `above_200k` tier prices every class of the call.
LONG_CONTEXT_TOKENS = 200_000
# The service tiers priced apart (litellm's `_flex`, `_priority` and `_batches` keys); others: default.
PRICED_SERVICE_TIERS = frozenset({"flex", "priority", "batch"})


class Counts(Protocol):
    """A call's tokens by class (a CallOutcome or a Usage): SPEC §20's classes."""

    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...
    @property
    def cache_write_1h_tokens(self) -> int: ...
    @property
    def reasoning_tokens(self) -> int: ...


@dataclass(frozen=True)
class Rates:
    """One tier's per-million prices in `CLASSES` order, each class resolved; None: not priced."""

    values: tuple[Decimal | None, ...]

    @property
    def input_per_mtok(self) -> Decimal | None:
        return self.values[INPUT]

    @property
    def output_per_mtok(self) -> Decimal | None:
        return self.values[OUTPUT]

    # A price list is read once and priced against on every call: its exact fractions over one
    # common denominator and its texts are worked out on first use.
    @functools.cached_property
    def fractions(self) -> tuple[tuple[int | None, ...], int]:
        ratios = [value.as_integer_ratio() if value is not None else None for value in self.values]
        denominator = 1
        for ratio in ratios:
            if ratio is not None:
                denominator = math.lcm(denominator, ratio[1])
        return tuple(r[0] * (denominator // r[1]) if r else None for r in ratios), denominator

    @functools.cached_property
    def texts(self) -> tuple[str | None, str | None]:
        return _text(self.values[INPUT]), _text(self.values[OUTPUT])

    @functools.cached_property
    def record_text(self) -> str | None:
        """The `prices` a record keeps: class -> per-million price string, for the priced classes."""
        found = {
            name: _text(value) for name, value in zip(CLASSES, self.values, strict=True) if value is not None
        }
        return orjson.dumps(found).decode() if found else None


NO_RATES = Rates((None,) * len(CLASSES))


@dataclass(frozen=True)
class Prices:
    """A model's prices from one source: the base tier and the long-context one (if it states one)."""

    base: Rates
    above_200k: Rates | None
    source: str | None

    @classmethod
    def of(cls, inp: Decimal | None, out: Decimal | None, source: str | None) -> Prices:
        """Input and output only (every other class takes them)."""
        return cls(resolve({"input_per_mtok": inp, "output_per_mtok": out}), None, source)

    @property
    def input_per_mtok(self) -> Decimal | None:
        return self.base.values[INPUT]

    @property
    def output_per_mtok(self) -> Decimal | None:
        return self.base.values[OUTPUT]

    def at(self, prompt_tokens: int) -> Rates:
        """The tier a call with this many prompt tokens is priced at."""
        if prompt_tokens > LONG_CONTEXT_TOKENS and self.above_200k is not None:
            return self.above_200k
        return self.base


@dataclass(frozen=True)
class Cost:
    nanos: int
    priced: bool
    input_per_mtok: str | None
    output_per_mtok: str | None
    markup_bps: int
    source: str | None
    prices: str | None = None  # the applied tier's `Rates.record_text`


UNKNOWN = Prices(NO_RATES, None, None)


def decimal_price(value: object) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        # str() first: a float's repr is the short decimal people wrote, its binary value is not.
        parsed = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return parsed if parsed.is_finite() and parsed >= 0 else None


def resolve(stated: Mapping[str, Decimal | None], under: Rates | None = None) -> Rates:
    """SPEC §20's fall-back rule: a class the source leaves out takes its input price (cache reads and
    writes) or its output price (reasoning). `under`: the base tier, for a long-context tier that
    leaves out its input or output price."""
    inp = stated.get("input_per_mtok")
    out = stated.get("output_per_mtok")
    if under is not None:
        inp = under.values[INPUT] if inp is None else inp
        out = under.values[OUTPUT] if out is None else out

    def given(key: str, default: Decimal | None) -> Decimal | None:
        value = stated.get(key)
        return default if value is None else value

    return Rates(
        (
            inp,
            out,
            given("cache_read_per_mtok", inp),
            given("cache_write_per_mtok", inp),
            given("cache_write_1h_per_mtok", inp),
            given("reasoning_per_mtok", out),
        )
    )


def _stated(value: object) -> dict[str, Decimal | None]:
    """The price keys a source states, from a config entry, an override or a plain mapping."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {key: decimal_price(value.get(key)) for key in PRICE_KEYS}
    return {key: decimal_price(getattr(value, key, None)) for key in PRICE_KEYS}


def _tier_of(value: object) -> object:
    return value.get("above_200k") if isinstance(value, Mapping) else getattr(value, "above_200k", None)


def prices_from(value: object, source: str) -> Prices | None:
    """A source's prices for a model (an override, a catalog entry), or None when it states none."""
    stated = _stated(value)
    if all(price is None for price in stated.values()):
        return None
    base = resolve(stated)
    tier = _stated(_tier_of(value))
    above = resolve(tier, base) if any(price is not None for price in tier.values()) else None
    return Prices(base, above, source)


def litellm_lookup(provider: str, model: str, service_tier: str | None = None) -> Prices:
    """litellm's cost map, via the upstream domain (the only code that imports litellm)."""
    try:
        # Looked up by name: the upstream domain may be built without it (then: unknown).
        prices_module = importlib.import_module("switchboard.upstream.prices")
    except ImportError:
        return UNKNOWN
    try:
        found = prices_module.litellm_price_table(provider, model, service_tier)
    except Exception:  # a broken cost-map entry must not lose the record: the call is unpriced
        log.warning("litellm price lookup failed for %s/%s", provider, model)
        return UNKNOWN
    if found is None:
        return UNKNOWN
    base, above = found
    return Prices(resolve(base), resolve(above) if above is not None else None, "litellm")


_CACHE_KEYS = ("cache_read_per_mtok", "cache_write_per_mtok", "cache_write_1h_per_mtok")


def missing_cache_prices(entries: Mapping[str, object]) -> list[str]:
    """The catalog entries that price their model without any cache price while litellm's map states
    some: their cache reads and writes are billed at the input price (SPEC §20's start-up warning)."""
    try:
        prices_module = importlib.import_module("switchboard.upstream.prices")
    except ImportError:
        return []
    found = []
    for key, entry in entries.items():
        stated = _stated(entry)
        if all(stated[k] is None for k in PRICE_KEYS) or any(stated[k] is not None for k in _CACHE_KEYS):
            continue
        provider, _, model = key.partition("/")
        if prices_module.litellm_knows_cache_prices(provider, model):
            found.append(key)
    return found


def find_prices(
    provider: str,
    model: str,
    overrides: Mapping[str, object],
    catalog: Mapping[str, object],
    litellm: Prices = UNKNOWN,
) -> Prices:
    """The first source that prices the model gives all its prices: economy override, catalog, litellm."""
    key = f"{provider}/{model}"
    for source, entries in (("override", overrides), ("catalog", catalog)):
        found = prices_from(entries.get(key), source)
        if found is not None:
            return found
    return litellm


def needs_litellm(prices: Prices) -> bool:
    return prices.source is None


def compute_cost(prices: Prices, counts: Counts, markup_bps: int) -> Cost:
    """cost = sum over classes of tokens * that class's price / 1e6 * (1 + bps/1e4), in nano-units,
    half-up once, at the tier the call's prompt falls in.

    Unpriced (cost 0, `priced` false) when no price is known, or when a class that has tokens has no
    price: a partial sum would be a silent undercount.
    """
    rates = prices.at(counts.prompt_tokens)
    nanos = class_nanos(rates, counts, markup_bps)
    inp, out = rates.texts
    return Cost(nanos or 0, nanos is not None, inp, out, markup_bps, prices.source, rates.record_text)


def class_nanos(rates: Rates, counts: Counts, markup_bps: int) -> int | None:
    """`compute_cost`'s nano-units alone; None when the call is unpriced."""
    prompt, completion = counts.prompt_tokens, counts.completion_tokens
    read, written, reasoning = counts.cached_tokens, counts.cache_write_tokens, counts.reasoning_tokens
    numerators, denominator = rates.fractions
    inp, out = numerators[INPUT], numerators[OUTPUT]
    # The cache and reasoning prices resolve to the input and output ones: those two decide.
    if (inp is None and out is None) or (prompt and inp is None) or (completion and out is None):
        return None
    if read or written or reasoning:
        numerator = _classes_numerator(numerators, counts)
    else:  # most calls: input and output alone, straight (every record pays for this)
        numerator = prompt * (inp or 0) + completion * (out or 0)
    # x 1e9 nanos per unit / 1e6 tokens per mtok = x 1000, then x (1e4 + bps) / 1e4: x (1e4 + bps) / 10.
    return _round_half_up(numerator * (_BPS + markup_bps), denominator * 10)


def _classes_numerator(numerators: tuple[int | None, ...], counts: Counts) -> int:
    prompt, completion = counts.prompt_tokens, counts.completion_tokens
    read = min(counts.cached_tokens, prompt)
    written = min(counts.cache_write_tokens, prompt - read)
    written_1h = min(counts.cache_write_1h_tokens, written)
    reasoning = min(counts.reasoning_tokens, completion)
    # Each token in one class: uncached input = prompt - cache reads - cache writes.
    tokens = (
        prompt - read - written,
        completion - reasoning,
        read,
        written - written_1h,
        written_1h,
        reasoning,
    )
    return sum(count * (price or 0) for count, price in zip(tokens, numerators, strict=True) if count)


def _worst_prices(rates: Rates) -> tuple[int | None, int | None, int]:
    """(input, output, denominator) numerators of a reservation: every input token uncached, every
    output token at the dearer of the output and reasoning prices."""
    numerators, denominator = rates.fractions
    out, reasoning = numerators[OUTPUT], numerators[REASONING]
    if out is not None and reasoning is not None:
        out = max(out, reasoning)
    return numerators[INPUT], out, denominator


def worst_case_nanos(
    prices: Prices, prompt_tokens: int, completion_tokens: int, markup_bps: int
) -> int | None:
    """A reservation's cost (SPEC §20): the prompt uncached and the answer at full length, at the
    tier the prompt falls in; None when a side with tokens has no price."""
    inp, out, denominator = _worst_prices(prices.at(prompt_tokens))
    if (
        (inp is None and out is None)
        or (prompt_tokens and inp is None)
        or (completion_tokens and out is None)
    ):
        return None
    numerator = prompt_tokens * (inp or 0) + completion_tokens * (out or 0)
    return _round_half_up(numerator * (_BPS + markup_bps), denominator * 10)


def largest_completion_within(
    prices: Prices, prompt_tokens: int, markup_bps: int, budget: int, upper: int
) -> int:
    """The largest completion (≤ `upper`) whose `worst_case_nanos` with `prompt_tokens` is ≤ `budget`
    nano-units; -1 when not even the prompt alone fits. Both sides must be priced.

    Solved in integers from `worst_case_nanos`' formula, not searched: the limits pay this on every
    call. cost(c) = round_half_up(x(c)) ≤ budget ⟺ x(c) < budget + ½, with
    x(c) = (p·in + c·out)·M / (10·D), M = 1e4 + bps, in/D and out/D the per-million prices.
    """
    inp, out, denominator = _worst_prices(prices.at(prompt_tokens))
    assert inp is not None and out is not None
    a = inp if prompt_tokens else 0
    scale = _BPS + markup_bps
    # 2·(p·a + k·out)·M < (2·budget + 1)·D·10, for the completion k.
    room = (2 * budget + 1) * denominator * 10 - 2 * prompt_tokens * a * scale
    if room <= 0:
        return -1
    step = 2 * out * scale
    if step <= 0:
        return upper  # output is free: any answer fits
    return min((room - 1) // step, upper)


def _round_half_up(numerator: int, denominator: int) -> int:
    """numerator / denominator (> 0) to an integer, halves away from zero (Decimal's ROUND_HALF_UP)."""
    magnitude = (2 * abs(numerator) + denominator) // (2 * denominator)
    return magnitude if numerator >= 0 else -magnitude


def _text(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")
