"""A call that may fall back to another model holds that model's worst case too (SPEC §13, §14), or
leaves the fallback out when it does not fit: decided by `Plan.decide`, pure given the standings."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from switchboard.errors import BudgetExceeded
from switchboard.limits.enforce import Ask, Fallback, Plan
from switchboard.limits.ledger import Standing
from switchboard.limits.rules import Limit
from switchboard.metering.pricing import Prices

CHEAP = Prices.of(Decimal("1"), Decimal("2"), "catalog")  # per million tokens: 1000 and 2000 nano a token
DEAR = Prices.of(Decimal("10"), Decimal("20"), "catalog")
UNPRICED = Prices.of(None, None, None)
DEAR_MODEL, OTHER_MODEL = ("anthropic", "dear"), ("gemini", "other")


def _limit(metric: str, amount: int, allow_unpriced: bool = False) -> Limit:
    return Limit(uuid.uuid4(), "user", str(uuid.uuid4()), None, metric, "day", amount, allow_unpriced)  # type: ignore[arg-type]


def _ask(*fallbacks: Fallback, own_cap: int | None = 100) -> Ask:
    return Ask("chat.completions", 10, own_cap, 1000, CHEAP, 0, fallbacks)


def test_the_hold_is_the_worst_case_of_the_first_model_and_every_fallback_that_fits() -> None:
    cost, tokens = _limit("cost", 10**9), _limit("tokens", 10**6)
    plan = Plan(_ask(Fallback(DEAR_MODEL, DEAR, 4000)))
    needs = plan.decide([Standing(cost, 0, 0), Standing(tokens, 0, 0)])
    assert plan.covered == (True,)
    assert needs[cost.id] == 10 * 10_000 + 100 * 20_000  # the dear model's prompt and capped answer
    assert needs[tokens.id] == 10 + 100  # the caller's cap bounds either model's answer


def test_without_a_cap_a_fallback_is_held_for_its_own_largest_answer() -> None:
    tokens = _limit("tokens", 10**6)
    plan = Plan(_ask(Fallback(OTHER_MODEL, CHEAP, 8000), own_cap=None))
    needs = plan.decide([Standing(tokens, 0, 0)])
    assert (plan.covered, needs[tokens.id]) == ((True,), 10 + 8000)


def test_a_fallback_that_does_not_fit_is_left_out_and_the_first_model_keeps_its_hold() -> None:
    cost = _limit("cost", 10 * 1000 + 100 * 2000)  # exactly the cheap model's worst case
    plan = Plan(_ask(Fallback(DEAR_MODEL, DEAR, 4000)))
    needs = plan.decide([Standing(cost, 0, 0)])
    assert plan.covered == (False,)
    assert needs[cost.id] == 10 * 1000 + 100 * 2000


def test_a_gateway_cap_is_set_for_the_first_model_and_bounds_the_fallback_it_keeps() -> None:
    cost = _limit("cost", 10 * 1000 + 500 * 2000 + 10 * 10_000 + 500 * 20_000)
    plan = Plan(_ask(Fallback(DEAR_MODEL, DEAR, 4000), own_cap=None))
    needs = plan.decide([Standing(cost, 10 * 10_000 + 500 * 20_000, 0)])  # leaves the cheap 500 tokens
    assert plan.cap == 500
    assert plan.covered == (False,)  # at 500 tokens the dear model would cost ten times as much
    assert needs[cost.id] == 10 * 1000 + 500 * 2000


def test_an_unpriced_fallback_is_left_out_under_a_cost_limit_unless_the_limit_allows_it() -> None:
    strict, lenient = _limit("cost", 10**9), _limit("cost", 10**9, allow_unpriced=True)
    plan = Plan(_ask(Fallback(OTHER_MODEL, UNPRICED, 4000)))
    plan.decide([Standing(strict, 0, 0)])
    assert plan.covered == (False,)
    plan.decide([Standing(lenient, 0, 0)])
    assert plan.covered == (True,)


def test_the_first_model_alone_decides_a_refusal() -> None:
    cost = _limit("cost", 10)
    with pytest.raises(BudgetExceeded):
        Plan(_ask(Fallback(OTHER_MODEL, CHEAP, 4000))).decide([Standing(cost, 0, 0)])


def test_deciding_again_forgets_the_cap_of_an_earlier_decision() -> None:
    cost = _limit("cost", 10**9)
    plan = Plan(_ask(own_cap=None))
    plan.decide([Standing(cost, 10**9 - 10 * 1000 - 300 * 2000, 0)])
    assert plan.cap == 300
    plan.decide([Standing(cost, 0, 0)])
    assert plan.cap is None
