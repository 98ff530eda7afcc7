"""Costs are exact: SPEC §6's price order, markup, one half-up rounding to nano-units, at any size."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

from switchboard.config_file import ModelEntry, PriceOverride
from switchboard.metering import pricing
from switchboard.metering.pricing import (
    Cost,
    Prices,
    find_prices,
    largest_completion_within,
    worst_case_nanos,
)
from switchboard.upstream.types import Usage

CATALOG = {
    "openai/gpt-4o-mini": ModelEntry(
        provider="openai", model="gpt-4o-mini", input_per_mtok="0.15", output_per_mtok="0.60"
    ),
    "anthropic/claude": ModelEntry(provider="anthropic", model="claude"),
}


def prices(inp: str | None, out: str | None) -> Prices:
    return Prices.of(Decimal(inp) if inp else None, Decimal(out) if out else None, "test")


def compute_cost(found: Prices, prompt: int, completion: int, markup_bps: int) -> Cost:
    """A call of plain input and output tokens only."""
    return pricing.compute_cost(found, Usage(prompt_tokens=prompt, completion_tokens=completion), markup_bps)


def test_catalog_prices_give_the_exact_nano_cost() -> None:
    found = find_prices("openai", "gpt-4o-mini", {}, CATALOG)
    cost = compute_cost(found, 1000, 500, 0)
    # 1000 x 0.15 / 1e6 + 500 x 0.60 / 1e6 = 0.00045 USD
    assert (cost.nanos, cost.priced, cost.source) == (450_000, True, "catalog")
    assert (cost.input_per_mtok, cost.output_per_mtok) == ("0.15", "0.60")


def test_economy_override_wins_over_catalog_and_markup_applies() -> None:
    overrides = {"openai/gpt-4o-mini": PriceOverride(input_per_mtok="1.10", output_per_mtok="2.20")}
    cost = compute_cost(find_prices("openai", "gpt-4o-mini", overrides, CATALOG), 1000, 500, 2500)
    # (1000 x 1.10 + 500 x 2.20) x 1000 = 2_200_000 nanos, x 1.25
    assert (cost.nanos, cost.source, cost.markup_bps) == (2_750_000, "override", 2500)


def test_the_first_source_that_prices_the_model_gives_all_its_prices() -> None:
    # SPEC §20: an override naming only the input price does not borrow the catalog's output price.
    overrides = {"openai/gpt-4o-mini": PriceOverride(input_per_mtok="2")}
    found = find_prices("openai", "gpt-4o-mini", overrides, CATALOG, prices("9", "0.5"))
    assert (found.input_per_mtok, found.output_per_mtok, found.source) == (Decimal("2"), None, "override")
    assert compute_cost(found, 10, 0, 0).nanos == 20_000
    assert compute_cost(found, 10, 1, 0).priced is False


def test_litellm_prices_are_used_when_economy_and_catalog_are_silent() -> None:
    found = find_prices(
        "anthropic", "claude", {}, CATALOG, Prices.of(Decimal("0.8"), Decimal("4"), "litellm")
    )
    assert compute_cost(found, 10, 10, 0).nanos == 48_000
    assert found.source == "litellm"


def test_half_a_nano_rounds_up() -> None:
    assert compute_cost(prices("0.0005", "0"), 1, 0, 0).nanos == 1  # exactly 0.5 -> 1 (half-even would say 0)
    assert compute_cost(prices("0.0015", "0"), 1, 0, 0).nanos == 2  # 1.5 -> 2
    assert compute_cost(prices("0.00049", "0"), 1, 0, 0).nanos == 0  # 0.49 -> 0


def test_rounding_happens_once_after_sum_and_markup() -> None:
    # 0.4 + 0.4 = 0.8 -> 1; rounding each side first would give 0.
    assert compute_cost(prices("0.0004", "0.0004"), 1, 1, 0).nanos == 1
    # 0.4 x 1.25 = 0.5 -> 1; rounding before the markup would give 0.
    assert compute_cost(prices("0.0004", "0"), 1, 0, 2500).nanos == 1
    # 1 bps on 10_000 nanos is exactly one more nano.
    assert compute_cost(prices("10", "0"), 1, 0, 1).nanos == 10_001


def test_huge_counts_and_long_prices_stay_exact() -> None:
    cost = compute_cost(prices("123.456789012345678901", "0.000000001"), 2_000_000_000, 3, 333)
    # Checked with exact fractions: 255135800172913.58... nanos.
    exact = (2_000_000_000 * Fraction("123.456789012345678901") + 3 * Fraction("0.000000001")) * 1000
    exact *= Fraction(10_333, 10_000)
    assert exact - 255_135_800_172_913 == Fraction(1_160_039_813, 2_000_000_000)
    assert cost.nanos == 255_135_800_172_914


def test_no_known_price_is_unpriced_never_a_silent_zero() -> None:
    cost = compute_cost(find_prices("anthropic", "claude", {}, CATALOG), 1000, 500, 0)
    assert (cost.nanos, cost.priced, cost.source) == (0, False, None)


def test_a_missing_price_for_a_side_with_tokens_is_unpriced() -> None:
    assert compute_cost(prices("1", None), 10, 5, 0).priced is False
    # No completion tokens: the missing output price is not needed.
    cost = compute_cost(prices("1", None), 10, 0, 0)
    assert (cost.nanos, cost.priced) == (10_000, True)


def exact_nanos(inp: Decimal, out: Decimal, prompt: int, completion: int, markup_bps: int) -> int:
    """The definition, in Decimal arithmetic with room for every digit."""
    with localcontext() as ctx:
        ctx.prec = 400
        exact = (prompt * inp + completion * out) * 1000 * (10_000 + markup_bps) / 10_000
        return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_costs_equal_the_exact_definition_for_any_prices_counts_and_markup() -> None:
    rng = random.Random(8)
    for _ in range(5000):
        inp, out = (
            Decimal(rng.randrange(10 ** rng.randrange(1, 25))).scaleb(-rng.randrange(0, 25)) for _ in range(2)
        )
        prompt, completion = (rng.choice([0, 1, rng.randrange(10**12)]) for _ in range(2))
        markup = rng.choice([0, 1, 2500, rng.randrange(1_000_001)])
        cost = compute_cost(Prices.of(inp, out, "test"), prompt, completion, markup)
        assert cost.nanos == exact_nanos(inp, out, prompt, completion, markup), (inp, out, prompt, completion)


def _worst(price: Prices, prompt: int, completion: int, markup: int) -> int:
    return worst_case_nanos(price, prompt, completion, markup) or 0


def _largest_by_search(price: Prices, prompt: int, markup: int, budget: int, upper: int) -> int:
    """The definition, one completion count at a time (binary search: cost grows with the count)."""
    if _worst(price, prompt, 0, markup) > budget:
        return -1
    low, high = 0, upper
    while low < high:
        middle = (low + high + 1) // 2
        if _worst(price, prompt, middle, markup) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def test_the_largest_completion_within_a_budget_is_the_one_compute_cost_admits() -> None:
    rng = random.Random(13)
    for _ in range(3000):
        price = prices(
            str(Decimal(rng.randrange(0, 10**7)).scaleb(-rng.randrange(0, 9))),
            str(Decimal(rng.randrange(0, 10**7)).scaleb(-rng.randrange(0, 9))),
        )
        prompt = rng.choice([0, 1, rng.randrange(1, 10**6)])
        markup = rng.choice([0, 1, 250, rng.randrange(0, 50_000)])
        upper = rng.choice([1, 4096, rng.randrange(1, 10**6)])
        # Budgets around the cost of a random answer, where the rounding decides.
        around = _worst(price, prompt, rng.randrange(0, upper + 1), markup)
        budget = max(around + rng.choice([-1, 0, 1, rng.randrange(-1000, 1000)]), 0)
        expected = _largest_by_search(price, prompt, markup, budget, upper)
        assert largest_completion_within(price, prompt, markup, budget, upper) == expected, (
            price,
            prompt,
            markup,
            budget,
            upper,
        )


def _rates(rng: random.Random) -> dict[str, Decimal]:
    return {
        key: Decimal(rng.randrange(0, 10**7)).scaleb(-rng.randrange(0, 9))
        for key in pricing.PRICE_KEYS
        if key in ("input_per_mtok", "output_per_mtok") or rng.random() < 0.7
    }


def _tiered(rng: random.Random) -> Prices:
    base = pricing.resolve(_rates(rng))
    above = pricing.resolve(_rates(rng), base) if rng.random() < 0.7 else None
    return Prices(base, above, "test")


def test_every_class_is_priced_by_the_exact_definition_at_the_tier_its_prompt_falls_in() -> None:
    rng = random.Random(20)
    for _ in range(3000):
        found = _tiered(rng)
        prompt = rng.choice([rng.randrange(0, 1000), 200_000, 200_001, rng.randrange(0, 10**6)])
        read = rng.randrange(0, prompt + 1)
        written = rng.randrange(0, prompt - read + 1)
        written_1h = rng.randrange(0, written + 1)
        completion = rng.randrange(0, 10**5)
        reasoning = rng.randrange(0, completion + 1)
        markup = rng.choice([0, 2500, rng.randrange(0, 50_000)])
        usage = Usage(prompt, completion, read, reasoning, written, written_1h)
        rates = found.above_200k if prompt > 200_000 and found.above_200k is not None else found.base
        inp, out, cache_read, cache_write, cache_write_1h, reasoning_price = rates.values
        assert None not in rates.values
        with localcontext() as ctx:
            ctx.prec = 400
            exact = (
                (prompt - read - written) * inp
                + read * cache_read
                + (written - written_1h) * cache_write
                + written_1h * cache_write_1h
                + (completion - reasoning) * out
                + reasoning * reasoning_price
            ) * 1000 * (10_000 + markup) / 10_000  # fmt: skip
            expected = int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))
        cost = pricing.compute_cost(found, usage, markup)
        assert (cost.nanos, cost.priced) == (expected, True)
        assert cost.prices is not None and '"input"' in cost.prices


def test_a_class_left_out_takes_the_input_or_output_price_and_the_tier_its_own() -> None:
    base = pricing.resolve({"input_per_mtok": Decimal(3), "output_per_mtok": Decimal(15)})
    assert base.values == tuple(Decimal(n) for n in (3, 15, 3, 3, 3, 15))
    tier = pricing.resolve({"input_per_mtok": Decimal(6), "cache_read_per_mtok": Decimal("0.6")}, base)
    assert tier.values == tuple(Decimal(n) for n in (6, 15, "0.6", 6, 6, 15))


def test_the_worst_case_prices_the_prompt_uncached_at_the_tier_and_the_answer_at_the_dearer_price() -> None:
    base = pricing.resolve(
        {"input_per_mtok": Decimal(3), "cache_read_per_mtok": Decimal("0.3"), "output_per_mtok": Decimal(15)}
    )
    above = pricing.resolve({"input_per_mtok": Decimal(6), "reasoning_per_mtok": Decimal(30)}, base)
    found = Prices(base, above, "test")
    assert worst_case_nanos(found, 200_000, 10, 0) == 200_000 * 3000 + 10 * 15_000
    assert worst_case_nanos(found, 200_001, 10, 0) == 200_001 * 6000 + 10 * 30_000


def test_the_largest_completion_within_a_budget_follows_the_worst_case_at_every_tier() -> None:
    rng = random.Random(21)
    for _ in range(2000):
        found = _tiered(rng)
        prompt = rng.choice([1, 200_000, 200_001, rng.randrange(1, 400_000)])
        markup = rng.choice([0, 250, rng.randrange(0, 50_000)])
        upper = rng.choice([1, 4096, rng.randrange(1, 10**5)])
        around = _worst(found, prompt, rng.randrange(0, upper + 1), markup)
        budget = max(around + rng.choice([-1, 0, 1, rng.randrange(-1000, 1000)]), 0)
        expected = _largest_by_search(found, prompt, markup, budget, upper)
        assert largest_completion_within(found, prompt, markup, budget, upper) == expected


def test_catalog_entries_without_cache_prices_litellm_knows_are_named() -> None:
    catalog = {
        "anthropic/claude-sonnet-4-5": ModelEntry(
            provider="anthropic", model="claude-sonnet-4-5", input_per_mtok="3", output_per_mtok="15"
        ),
        # Stated: no warning. Unpriced here: litellm's prices apply whole. Unknown to litellm: nothing to say.
        "openai/gpt-4o": ModelEntry(
            provider="openai", model="gpt-4o", input_per_mtok="2.5", cache_read_per_mtok="1.25"
        ),
        "openai/gpt-4o-mini": ModelEntry(provider="openai", model="gpt-4o-mini"),
        "openai/house-model": ModelEntry(provider="openai", model="house-model", input_per_mtok="1"),
    }
    assert pricing.missing_cache_prices(catalog) == ["anthropic/claude-sonnet-4-5"]
