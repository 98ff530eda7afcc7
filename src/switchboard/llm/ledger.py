"""A model call's place in the ledger: its limit holds before the provider is called, and the one
settlement every ending goes through (success, error, cancel; crash recovery in llm/upkeep.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from switchboard.config_file import ModelEntry
from switchboard.errors import LimitRefused
from switchboard.idempotency.service import StoredResponse
from switchboard.limits import enforce
from switchboard.limits.rules import Limit
from switchboard.llm.context import PreparedCall
from switchboard.llm.outcomes import build_outcome
from switchboard.llm.prompt_bound import prompt_bound
from switchboard.llm.services import Pipeline
from switchboard.metering.outcome import CallOutcome
from switchboard.observability import events
from switchboard.settlement import recovery
from switchboard.settlement.call import Settlement
from switchboard.upstream.prices import litellm_max_output

GATEWAY_CRASHED = "gateway_crashed"


def _model_max(endpoint: str, model: ModelEntry) -> int:
    if endpoint == "embeddings":
        return 0
    return litellm_max_output(model.provider, model.model) or enforce.DEFAULT_MAX_OUTPUT


async def _fallbacks(
    pipeline: Pipeline, call: PreparedCall, with_prices: bool
) -> tuple[enforce.Fallback, ...]:
    """The models the call's later routes may fall back to (SPEC §14), other than the first route's,
    each once: a call's hold covers every model it may end up calling."""
    first = (call.model.provider, call.model.model)
    fallbacks: dict[tuple[str, str], enforce.Fallback] = {}
    for route in call.routes:
        model = route.model
        key = (model.provider, model.model)
        if key == first or key in fallbacks:
            continue
        prices = None
        if with_prices:
            prices, _ = await pipeline.call_sink.price_of(call.economy_id, model.provider, model.model)
        fallbacks[key] = enforce.Fallback(key, prices, _model_max(call.endpoint, model))
    return tuple(fallbacks.values())


@dataclass(frozen=True)
class RecoveryRecord(CallOutcome):
    """What recovery needs to write a call's `abandoned` record if its replica dies: the record, and
    the call's id. Kept as JSON with the call's holds and idempotency claim, written as it is (orjson
    writes a dataclass, its ids and its times itself): every call under a limit makes one."""

    call_id: str = ""


def recovery_record(call: PreparedCall) -> RecoveryRecord:
    outcome = build_outcome(
        call,
        status="abandoned",
        usage=None,
        error_code=GATEWAY_CRASHED,
        of=RecoveryRecord,
        call_id=call.call_id,
    )
    assert isinstance(outcome, RecoveryRecord)
    return outcome


async def _ask(
    pipeline: Pipeline, call: PreparedCall, limits: Sequence[Limit]
) -> tuple[enforce.Ask, tuple[enforce.Fallback, ...]]:
    prices, markup = None, 0
    costed = any(limit.metric == "cost" for limit in limits)
    if costed:
        model = call.model
        prices, markup = await pipeline.call_sink.price_of(call.economy_id, model.provider, model.model)
    fallbacks = await _fallbacks(pipeline, call, costed) if len(call.routes) > 1 else ()
    ask = enforce.Ask(
        endpoint=call.endpoint,
        # never below what a provider can bill: an estimate would let concurrent calls overspend
        prompt_tokens=prompt_bound(call.body, ((r.model.provider, r.model.model) for r in call.routes)),
        own_cap=enforce.own_cap(call.endpoint, call.body),
        model_max=_model_max(call.endpoint, call.model),
        prices=prices,
        markup_bps=markup,
        fallbacks=fallbacks,
    )
    return ask, fallbacks


async def begin(pipeline: Pipeline, call: PreparedCall) -> None:
    """Holds the call's worst case against every limit that applies (402/429 when one does not fit),
    sets the output cap the gateway chose, and leaves what recovery needs with the idempotency claim.
    """
    call.call_id = os.urandom(16).hex()  # 128 random bits, as a uuid4's hex, without the UUID object
    limits = await pipeline.limits.applying(
        call.economy_id, call.principal.user_id, call.room_id, call.agent_id, call.principal.api_key_id
    )
    hit = call.cache.hit if call.cache is not None else None
    if hit is not None and limits:
        # SPEC §23: a hit counts as a request (and its tokens) and costs nothing against a cost limit.
        limits = tuple(limit for limit in limits if limit.metric != "cost")
    record = recovery_record(call) if limits or call.claim is not None else None
    if limits:
        if hit is not None:
            usage = hit.usage
            ask = enforce.Ask(call.endpoint, usage.prompt_tokens, usage.completion_tokens, 0, None, 0)
            fallbacks: tuple[enforce.Fallback, ...] = ()
        else:
            ask, fallbacks = await _ask(pipeline, call, limits)
        try:
            call.hold, plan = await enforce.reserve(
                pipeline.write_transactions,
                pipeline.hold_leases,
                limits,
                ask,
                call_id=call.call_id,
                call=record,
                lease_seconds=pipeline.settings.lease_seconds,
            )
        except LimitRefused as refused:
            events.limit_refused(pipeline.metrics)
            if pipeline.webhooks is not None:
                pipeline.webhooks.limit_refused(call, refused)
            raise
        if plan.cap is not None:
            call.gateway_cap = plan.cap
            call.body[enforce.cap_field(call.endpoint)] = plan.cap
        if not all(plan.covered):
            # A fallback whose worst case does not fit what is left would overspend: never taken.
            left_out = {f.model for f, ok in zip(fallbacks, plan.covered, strict=True) if not ok}
            call.routes = [r for r in call.routes if (r.model.provider, r.model.model) not in left_out]
    if call.claim is not None and record is not None:
        await pipeline.idempotency.attach(call.claim, record)


def cap_for_route(call: PreparedCall) -> None:
    """A later attempt's model may give shorter answers than the first's, and a provider refuses a cap
    above its model's (400): the cap the gateway set is brought within it, and back up for a model
    that allows it. A caller's own cap is the caller's to choose and is left as sent."""
    if call.gateway_cap is not None:
        model_max = _model_max(call.endpoint, call.model)
        call.body[enforce.cap_field(call.endpoint)] = min(call.gateway_cap, model_max)


async def record_attempt(pipeline: Pipeline, call: PreparedCall, outcome: CallOutcome) -> None:
    """The record of an attempt the call moved on from (SPEC §14); the call's last attempt is
    recorded by `settle`, which also ends its holds and its idempotency claim."""
    await pipeline.call_sink.record(outcome)
    events.attempt_moved_on(pipeline.metrics)
    if call.hold is not None or call.claim is not None:
        await _follow_attempt(pipeline, call)


async def _follow_attempt(pipeline: Pipeline, call: PreparedCall) -> None:
    """Recovery's record follows the call to the attempt now under way: should the replica die in
    it, the `abandoned` record names that attempt, its model and its credential, not the first's."""
    record = recovery_record(call)
    if call.hold is not None:
        async with pipeline.engine.begin() as conn:
            await recovery.remember_call(conn, call.call_id, record)
    if call.claim is not None:
        await pipeline.idempotency.attach(call.claim, record)


async def settle(
    pipeline: Pipeline, call: PreparedCall, outcome: CallOutcome, stored: StoredResponse | None = None
) -> None:
    """The record, the limits' settlement and the idempotent answer (`stored`; None releases the key),
    committed together; returns once they are."""
    settlement = None
    if call.hold is not None or call.claim is not None:
        settlement = Settlement(
            call_id=call.call_id if call.hold is not None else None,
            limits=call.hold.limits if call.hold is not None else (),
            claim=call.claim,
            stored=stored,
        )
    cost: int | None = None  # the record's, once committed (metrics and the access record)
    try:
        cost = await pipeline.call_sink.record(outcome, settlement)
    finally:
        events.call_settled(pipeline.metrics, pipeline.catalog.by_key, call, outcome, cost)
        if call.hold is not None and cost and pipeline.webhooks is not None:
            pipeline.webhooks.cost_settled(call.hold.limits)  # budget thresholds, checked off the call
        if call.hold is not None:
            await call.hold.stop()
        if call.claim is not None:
            await pipeline.idempotency.forget(call.claim)
