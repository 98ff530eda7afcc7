"""Reserve before the provider is called (SPEC §13): what a call may spend, its output cap, its headers.

A call's worst case is held against every limit that applies to it: one request, its prompt (the
upper bound llm/prompt_bound computes, every token uncached) plus its largest answer in tokens,
and the cost of both. When a cost or tokens limit applies and the caller set no output cap, the
gateway sets the largest one whose worst case fits. The hold is replaced by what the call actually
used when its usage record is written (settlement/transaction.py, one transaction).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from switchboard.db.write_transaction import WriteTransactions
from switchboard.errors import BudgetExceeded, LimitRateExceeded, LimitRefused
from switchboard.kit.clock import utcnow
from switchboard.limits import ledger
from switchboard.limits.allowance import Allowance
from switchboard.limits.allowances import Allowances
from switchboard.limits.hold import Hold
from switchboard.limits.leases import HoldLeases
from switchboard.limits.ledger import Standing
from switchboard.limits.postgres_reserve import reserve_in_one_statement
from switchboard.limits.rate_headers import rate_headers
from switchboard.limits.rules import Limit, resets_at, retry_after, seconds_until_fits
from switchboard.metering.service import Prices, largest_completion_within, worst_case_nanos

log = logging.getLogger("switchboard.limits")

# When neither the caller, the catalog nor litellm's map says how long an answer may be.
DEFAULT_MAX_OUTPUT = 4096


class Fallback(NamedTuple):
    """A model a later route of the call may fall back to (SPEC §14), other than the first route's:
    the hold covers its worst case too, or the call leaves it out."""

    model: tuple[str, str]  # (provider, model): the routes it stands for
    prices: Prices | None
    model_max: int  # its largest answer (0 for embeddings)


class Ask(NamedTuple):
    """What a call asks of its limits, known before the provider is called (a tuple: every call under
    a limit makes one, and a frozen dataclass sets each field through object.__setattr__)."""

    endpoint: str
    prompt_tokens: int
    own_cap: int | None  # the caller's max_tokens / max_completion_tokens
    model_max: int  # the first route's model's largest answer (0 for embeddings)
    prices: Prices | None  # the first route's model's
    markup_bps: int
    fallbacks: tuple[Fallback, ...] = ()


# The output cap's field in each request family (SPEC §13: the cap is sent as the family's field).
_CAP_FIELDS = {
    "completions": ("max_tokens",),
    "responses": ("max_output_tokens",),
    "messages": ("max_tokens",),
}
_CHAT_CAPS = ("max_completion_tokens", "max_tokens")


def own_cap(endpoint: str, body: dict[str, Any]) -> int | None:
    """The smallest of the caps the caller set (integers, not booleans), if any."""
    cap = None
    for name in _CAP_FIELDS.get(endpoint, _CHAT_CAPS):
        value = body.get(name)
        if isinstance(value, int) and value is not True and value is not False:
            cap = value if cap is None or value < cap else cap
    return cap


def cap_field(endpoint: str) -> str:
    return _CAP_FIELDS.get(endpoint, _CHAT_CAPS)[0]


def _priced(prices: Prices | None, model_max: int) -> bool:
    return (
        prices is not None
        and prices.input_per_mtok is not None
        and (model_max == 0 or prices.output_per_mtok is not None)
    )


def _cost(ask: Ask, completion: int, prices: Prices | None = None) -> int:
    prices = prices if prices is not None else ask.prices
    assert prices is not None
    return worst_case_nanos(prices, ask.prompt_tokens, completion, ask.markup_bps) or 0


@dataclass
class Plan:
    """Filled in by `decide` inside the reservation's transaction (which may decide more than once)."""

    ask: Ask
    cap: int | None = None  # the output cap the gateway set, if it set one
    headers: dict[str, str] = field(default_factory=dict)
    # Per `ask.fallbacks`, whether the hold covers it; the call leaves out those it does not.
    covered: tuple[bool, ...] = ()

    def decide(self, standings: list[Standing]) -> dict[uuid.UUID, int]:
        """The call's needs by limit id (`ledger.Planner`): raises 402/429 when one does not fit."""
        by_id: dict[uuid.UUID, int] = {}  # a loop, not a comprehension: no function frame (3.11)
        needs = self.needs(standings)
        for standing, need in zip(standings, needs, strict=True):
            by_id[standing.limit.id] = need
        self.admitted(standings, needs)
        return by_id

    def admitted(self, standings: list[Standing], needs: Sequence[int] | None) -> None:
        """The call is held: its headers, on what `standings` have left less `needs` (None: taken off
        already). Not before: a call that does not fit an allowance is decided again elsewhere."""
        self.headers = rate_headers(standings, needs)
        if self.cap is not None:
            self.headers["x-switchboard-max-tokens"] = str(self.cap)

    def needs(self, standings: list[Standing]) -> list[int]:
        """`decide`'s needs by position in `standings` (a limit's id, a UUID, hashes in Python); the
        cap the gateway sets and the fallbacks covered, not the headers (`admitted`)."""
        ask = self.ask
        prices, model_max, prompt = ask.prices, ask.model_max, ask.prompt_tokens
        self.cap = None
        priced = _priced(prices, model_max)
        if not priced:
            for standing in standings:
                if standing.limit.metric == "cost" and not standing.limit.allow_unpriced:
                    raise _unpriced(standing.limit)
        cap = ask.own_cap if ask.own_cap is not None else model_max
        cost = None  # the worst case's cost at `cap`, once computed
        if ask.own_cap is None and model_max:
            for standing in standings:
                metric = standing.limit.metric
                if metric == "cost" and priced:
                    if cost is None:
                        cost = _cost(ask, cap)
                    if cost > standing.remaining:  # else the largest answer that fits is `cap` itself
                        assert prices is not None
                        fit = largest_completion_within(
                            prices, prompt, ask.markup_bps, standing.remaining, cap
                        )
                        if fit < cap:
                            cap, cost = fit, None
                elif metric == "tokens" and prompt + cap > standing.remaining:
                    cap, cost = standing.remaining - prompt, None
            if cap < 1:
                cap = max(cap, 0)  # nothing fits: the check below refuses with the tightest limit
            elif cap < model_max:
                self.cap = cap
        needs: list[int] = []
        refused: list[tuple[Standing, int]] = []
        nothing_fits = model_max != 0 and cap < 1  # refuses every limit but a requests one
        for standing in standings:
            metric = standing.limit.metric
            if metric == "requests":
                need = 1
            elif metric == "tokens":
                need = prompt + cap
            else:
                if cost is None:
                    cost = _cost(ask, cap) if priced else 0
                need = cost
            if need > standing.remaining or (nothing_fits and metric != "requests"):
                refused.append((standing, need))
            needs.append(need)
        if refused:
            raise _refusal(refused, standings, utcnow())
        if ask.fallbacks:
            bound = ask.own_cap if ask.own_cap is not None else self.cap
            self.covered = _cover_fallbacks(ask, standings, needs, bound)
        return needs


def _cover_fallbacks(
    ask: Ask, standings: list[Standing], needs: list[int], cap: int | None
) -> tuple[bool, ...]:
    """Raises `needs` (by position in `standings`) to the worst case of every fallback model that fits
    what each limit has left, and says which do. The first route's needs (already in `needs`) decided
    the cap and the refusal: a pricier fallback never shrinks the answer the first route may give, it
    only goes unused."""
    covered = []
    for fallback in ask.fallbacks:
        # The answer is bounded by the cap in the request (the caller's or the gateway's), else by
        # the fallback model's own largest answer.
        completion = min(cap, fallback.model_max) if cap is not None else fallback.model_max
        priced = _priced(fallback.prices, fallback.model_max)
        asks: list[int] = []
        for standing in standings:
            limit = standing.limit
            if limit.metric == "requests":
                need = 1
            elif limit.metric == "tokens":
                need = ask.prompt_tokens + completion
            elif priced:
                need = _cost(ask, completion, fallback.prices)
            elif limit.allow_unpriced:
                need = 0
            else:
                break  # a cost limit that admits priced models only: this model cannot be metered
            if need > standing.remaining:
                break
            asks.append(need)
        else:
            for index, need in enumerate(asks):
                if need > needs[index]:
                    needs[index] = need
            covered.append(True)
            continue
        covered.append(False)
    return tuple(covered)


def _unpriced(limit: Limit) -> BudgetExceeded:
    return BudgetExceeded(
        f"the model has no price, and cost limit {limit.id} only admits priced models",
        openai_code="unpriced_model",
        extra={"limit_id": str(limit.id)},
    )


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _refusal(
    refused: Sequence[tuple[Standing, int]], standings: list[Standing], now: datetime
) -> LimitRefused:
    costs = [standing for standing, _ in refused if standing.limit.metric == "cost"]
    if costs:  # waiting a few seconds does not help a spent budget: 402, which SDKs do not retry
        limit = costs[0].limit
        reset = _iso(resets_at(limit.window, now)) if not limit.rolling else None
        return BudgetExceeded(
            f"cost limit {limit.id} is spent" + (f"; it resets at {reset}" if reset else ""),
            extra={"limit_id": str(limit.id), "resets_at": reset},
        )
    waits = [(seconds_until_fits(s.limit, need, s.remaining, now), s.limit) for s, need in refused]
    wait, limit = max(waits, key=lambda pair: pair[0])
    # OpenAI sends its x-ratelimit-* on a 429 too, and clients read them there; the refused call
    # holds nothing, so what they say is what is left without it.
    headers = rate_headers(standings, None, now)
    headers.pop("x-switchboard-budget-remaining", None)
    headers["Retry-After"] = retry_after(wait)
    return LimitRateExceeded(
        f"{limit.metric} limit {limit.id} ({limit.amount} per {limit.window}) is reached",
        headers=headers,
        extra={"limit_id": str(limit.id)},
    )


async def reserve(
    transactions: WriteTransactions,
    leases: HoldLeases,
    limits: tuple[Limit, ...],
    ask: Ask,
    *,
    call_id: str,
    call: Callable[[], object],  # the call's record, kept as JSON for recovery; built when needed
    lease_seconds: float,
    allowances: Allowances | None = None,
    claimed: bool = False,
) -> tuple[Hold, Plan]:
    """Holds the call's worst case, or raises 402/429; returns the hold and what was decided (the cap
    the gateway set, the fallbacks the hold covers).

    A call whose worst case fits what this process's allowance on these limits has free is admitted
    in memory, and its record for recovery is left on a row of its own unless its idempotency claim
    carries it (`claimed`); else the call reserves in the database. The upkeep loop renews leases.
    """
    plan = Plan(ask)
    allowance = allowances.of(limits) if allowances is not None else None
    if allowance is not None and allowance.stored:
        assert allowances is not None
        # Given back whole by the last call of a spell, it has nothing free until granted again.
        empty = not any(allowance.granted)
        taken = None if empty else _from_allowance(allowance, limits, plan, call)
        if taken is None and allowances.refills(allowance):
            await allowances.refill(allowance)
            taken = _from_allowance(allowance, limits, plan, call)
        if taken is not None:
            allowance.started()  # before the wait below: the allowance is not given back under it
            allowances.want(allowance)
            if not claimed:
                await allowances.record(allowance, taken.flight)
            return taken, plan
    reserve_once = functools.partial(_reserve_one, transactions, limits, plan, call_id, call(), lease_seconds)
    try:
        needs = await reserve_once()
    except LimitRefused:
        if allowances is None or not await allowances.ask_back(limits):
            raise
        needs = await _again_until(reserve_once, allowances, limits)
    leases.add(call_id)
    if allowance is not None:
        allowance.started([needs[limit.id] for limit in limits])
        assert allowances is not None
        allowances.want(allowance)
    return Hold(call_id, tuple(limits), plan.headers, leases=leases, allowance=allowance), plan


def _from_allowance(
    allowance: Allowance, limits: tuple[Limit, ...], plan: Plan, call: Callable[[], object]
) -> Hold | None:
    """The call on the allowance, decided on what the allowance last saw of its limits (its cap and
    headers): None when that refuses it or its worst case does not fit what is free."""
    standings = allowance.standings
    if not standings:
        return None
    try:
        needs = plan.needs(standings)
    except LimitRefused:
        return None  # decided again in the database, on what the limits have now
    flight = allowance.take(needs, call)
    if flight is None:
        return None
    plan.admitted(standings, None)  # `take` took its needs off the standings
    return Hold(allowance.name, limits, plan.headers, allowance=allowance, flight=flight)


async def _reserve_one(
    transactions: WriteTransactions,
    limits: Sequence[Limit],
    plan: Plan,
    call_id: str,
    call: object | None,
    lease_seconds: float,
) -> dict[uuid.UUID, int]:
    held = None
    if transactions.dialect_name == "postgresql":
        held = await reserve_in_one_statement(transactions, limits, plan.decide, call_id, call, lease_seconds)
    if held is None:
        held = await ledger.reserve(
            transactions, limits, plan.decide, call_id=call_id, call=call, lease_seconds=lease_seconds
        )
    return held


RETRY_SECONDS = 0.2


async def _again_until(
    reserve_once: Callable[[], Awaitable[dict[uuid.UUID, int]]],
    allowances: Allowances,
    limits: tuple[Limit, ...],
) -> dict[uuid.UUID, int]:
    """Tries again until allowances' free parts could be back, asking each time (a grant under way lands)."""
    deadline = time.monotonic() + allowances.patience
    while True:
        try:
            return await reserve_once()
        except LimitRefused:
            if time.monotonic() >= deadline:
                raise
        await allowances.ask_back(limits)
        await asyncio.sleep(RETRY_SECONDS)
