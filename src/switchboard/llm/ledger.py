"""A model call's place in the ledger: its limit holds before the provider is called (`begin`
returns them as the call's `Reservation`), and the one settlement every ending goes through
(success, error, cancel; crash recovery in llm/upkeep.py).
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Sequence
from typing import NamedTuple

from switchboard.cache.entry import CachedAnswer
from switchboard.config_file import ModelEntry
from switchboard.errors import LimitRefused
from switchboard.idempotency.service import Claim, StoredResponse
from switchboard.limits import enforce
from switchboard.limits.hold import Hold
from switchboard.limits.rules import Limit
from switchboard.llm.call_attempt import Attempt, model_max
from switchboard.llm.prompt_bound import prompt_bound
from switchboard.llm.services import Pipeline
from switchboard.metering.outcome import CallOutcome, new_record_id
from switchboard.metering.pricing import Prices
from switchboard.observability import events
from switchboard.routing.route import Route
from switchboard.settlement import recovery
from switchboard.settlement.call import Settlement
from switchboard.settlement.limit_counters import counted

GATEWAY_CRASHED = "gateway_crashed"


class Reservation(NamedTuple):
    """What `begin` holds for a call: its id in the ledger, its idempotency claim, its limit holds
    and the output cap the limits set (SPEC §13), if they set one."""

    call_id: str  # '' for a call with no limit and no idempotency claim: nothing refers to it
    # The id its usage record will have (None: the writer's own), named in its record for recovery: a
    # dead call's `abandoned` record takes it too, so that a call is recorded once whatever happens.
    record_id: uuid.UUID | None
    claim: Claim | None
    hold: Hold | None
    gateway_cap: int | None
    # The request's routes the hold covers (a fallback whose worst case does not fit is left out).
    routes: Sequence[Route]


async def _fallbacks(pipeline: Pipeline, attempt: Attempt, with_prices: bool) -> tuple[enforce.Fallback, ...]:
    """The models the call's later routes may fall back to (SPEC §14), other than the first route's,
    each once: a call's hold covers every model it may end up calling."""
    call = attempt.request
    first = (attempt.model.provider, attempt.model.model)
    fallbacks: dict[tuple[str, str], enforce.Fallback] = {}
    for route in call.routes:
        model = route.model
        key = (model.provider, model.model)
        if key == first or key in fallbacks:
            continue
        prices = None
        if with_prices:
            prices, _ = await _price_of(pipeline, call.economy_id, model)
        fallbacks[key] = enforce.Fallback(key, prices, model_max(call.endpoint, model))
    return tuple(fallbacks.values())


# What recovery needs to write a call's `abandoned` record if its replica dies: the record's fields
# (the others take their defaults; its time is the recovery's), and the call's id. Kept as JSON with
# the call's holds, record row or idempotency claim (orjson writes its ids itself); every call under
# a limit makes one, so it is a dict, not a CallOutcome: a frozen dataclass sets each of its fields
# through object.__setattr__.
RecoveryRecord = dict[str, object]


def recovery_record(attempt: Attempt, call_id: str, record_id: uuid.UUID | None) -> RecoveryRecord:
    call, route = attempt.request, attempt.route
    principal = call.principal
    return {
        "request_id": call.request_id,
        "economy_id": call.economy_id,
        "user_id": principal.user_id,
        "room_id": call.room_id,
        "agent_id": call.agent_id,
        "session_id": call.session_id,
        "credential_id": route.credential.id,
        "credential_scope": route.credential.scope,
        "provider": route.model.provider,
        "model": route.model.model,
        "selector": call.selector,
        "endpoint": call.endpoint,
        "stream": call.stream,
        "status": "abandoned",
        "error_code": GATEWAY_CRASHED,
        "idempotency_key": call.idempotency_key,
        "api_key_id": principal.api_key_id,
        "attempt": attempt.number,
        "call_id": call_id,
        "record_id": record_id,
    }


def _same(record: RecoveryRecord) -> RecoveryRecord:
    return record


async def _price_of(pipeline: Pipeline, economy_id: uuid.UUID, model: ModelEntry) -> tuple[Prices, int]:
    """The model's prices and the economy's markup, from memory when the usage writer keeps them:
    awaiting the writer's read costs every call under a cost limit a chain of coroutines."""
    kept = pipeline.call_sink.kept_price_of(economy_id, model.provider, model.model)
    if kept is not None:
        return kept
    return await pipeline.call_sink.price_of(economy_id, model.provider, model.model)


async def _ask(
    pipeline: Pipeline, attempt: Attempt, limits: Sequence[Limit]
) -> tuple[enforce.Ask, tuple[enforce.Fallback, ...]]:
    call = attempt.request
    prices, markup = None, 0
    costed = any(limit.metric == "cost" for limit in limits)
    if costed:
        prices, markup = await _price_of(pipeline, call.economy_id, attempt.model)
    fallbacks = await _fallbacks(pipeline, attempt, costed) if len(call.routes) > 1 else ()
    ask = enforce.Ask(
        endpoint=call.endpoint,
        # never below what a provider can bill: an estimate would let concurrent calls overspend
        prompt_tokens=prompt_bound(call.body, ((r.model.provider, r.model.model) for r in call.routes)),
        own_cap=enforce.own_cap(call.endpoint, call.body),
        model_max=model_max(call.endpoint, attempt.model),
        prices=prices,
        markup_bps=markup,
        fallbacks=fallbacks,
    )
    return ask, fallbacks


async def begin(
    pipeline: Pipeline, first: Attempt, claim: Claim | None, hit: CachedAnswer | None = None
) -> Reservation:
    """Holds the call's worst case against every limit that applies (402/429 when one does not fit),
    chooses the output cap, and leaves what recovery needs with the idempotency `claim`. `hit`: the
    response cache's stored answer, which counts as it was (SPEC §23)."""
    call = first.request
    limits = await pipeline.limits.applying(
        call.economy_id, call.principal.user_id, call.room_id, call.agent_id, call.principal.api_key_id
    )
    if hit is not None and limits:
        # SPEC §23: a hit counts as a request (and its tokens) and costs nothing against a cost limit.
        limits = tuple(limit for limit in limits if limit.metric != "cost")
    recovered = bool(limits) or claim is not None
    # The id names the call to recovery and to its holds' settlement: a call with neither has no use
    # for one. 128 random bits, as a uuid4's hex, without the UUID object.
    call_id = os.urandom(16).hex() if recovered else ""
    record_id = new_record_id() if recovered else None
    # Built now only for an idempotency claim, which carries it; a call's hold or record row is
    # given it as it is written (limits/enforce.py).
    record = recovery_record(first, call_id, record_id) if claim is not None else None
    hold, gateway_cap, routes = None, None, call.routes
    if limits:
        if hit is not None:
            usage = hit.usage
            ask = enforce.Ask(call.endpoint, usage.prompt_tokens, usage.completion_tokens, 0, None, 0)
            fallbacks: tuple[enforce.Fallback, ...] = ()
        else:
            ask, fallbacks = await _ask(pipeline, first, limits)
        try:
            hold, plan = await enforce.reserve(
                pipeline.write_transactions,
                pipeline.hold_leases,
                limits,
                ask,
                call_id=call_id,
                call=functools.partial(_same, record)
                if record is not None
                else functools.partial(recovery_record, first, call_id, record_id),
                lease_seconds=pipeline.settings.lease_seconds,
                allowances=pipeline.allowances,
                claimed=claim is not None,
            )
        except LimitRefused as refused:
            events.limit_refused(pipeline.metrics)
            if pipeline.webhooks is not None:
                pipeline.webhooks.limit_refused(call, refused)
            raise
        events.limit_admitted(pipeline.metrics, hold.drawn)
        gateway_cap = plan.cap
        if not all(plan.covered):
            # A fallback whose worst case does not fit what is left would overspend: never taken.
            left_out = {f.model for f, ok in zip(fallbacks, plan.covered, strict=True) if not ok}
            routes = [r for r in routes if (r.model.provider, r.model.model) not in left_out]
    if claim is not None and record is not None:
        await pipeline.idempotency.attach(claim, record)
    return Reservation(call_id, record_id, claim, hold, gateway_cap, routes)


async def record_attempt(
    pipeline: Pipeline, reservation: Reservation, outcome: CallOutcome, under_way: Attempt
) -> None:
    """The record of an attempt the call moved on from (SPEC §14); the call's last attempt is
    recorded by `settle`, which also ends its holds and its idempotency claim."""
    await pipeline.call_sink.record(outcome)
    events.attempt_moved_on(pipeline.metrics)
    if reservation.hold is not None or reservation.claim is not None:
        await _follow_attempt(pipeline, reservation, under_way)


async def _follow_attempt(pipeline: Pipeline, reservation: Reservation, under_way: Attempt) -> None:
    """Recovery's record follows the call to the attempt now under way: should the replica die in
    it, the `abandoned` record names that attempt, its model and its credential, not the first's."""
    record = recovery_record(under_way, reservation.call_id, reservation.record_id)
    hold = reservation.hold
    if hold is not None and hold.drawn:
        assert pipeline.allowances is not None
        await pipeline.allowances.follow(hold.flight, record)
    elif hold is not None:
        async with pipeline.engine.begin() as conn:
            await recovery.remember_call(conn, hold.call_id, record)
    if reservation.claim is not None:
        await pipeline.idempotency.attach(reservation.claim, record)


async def settle(
    pipeline: Pipeline,
    last: Attempt,
    reservation: Reservation,
    outcome: CallOutcome,
    stored: StoredResponse | None = None,
) -> None:
    """The record of the call's `last` attempt, the limits' settlement and the idempotent answer
    (`stored`; None releases the key), committed together; returns once they are."""
    settlement = None
    hold, claim = reservation.hold, reservation.claim
    if hold is not None:
        returned = hold.settling()
        settlement = Settlement(
            call_id=hold.call_id,  # the call's own, or its allowance's
            limits=hold.limits,
            claim=claim,
            stored=stored,
            drawn=hold.drawn,
            returned=returned,
            record_id=reservation.record_id,
        )
    elif claim is not None:
        settlement = Settlement(claim=claim, stored=stored, record_id=reservation.record_id)
    cost: int | None = None  # the record's, once committed (metrics and the access record)
    try:
        cost = await pipeline.call_sink.record(outcome, settlement)
    finally:
        events.call_settled(pipeline.metrics, pipeline.catalog.by_key, last, outcome, cost)
        if hold is not None and cost and pipeline.webhooks is not None:
            pipeline.webhooks.cost_settled(hold.limits)  # budget thresholds, checked off the call
        if hold is not None:
            await hold.stop(
                [counted(limit.metric, outcome, cost) for limit in hold.limits] if cost is not None else None
            )
        if claim is not None:
            await pipeline.idempotency.forget(claim)
