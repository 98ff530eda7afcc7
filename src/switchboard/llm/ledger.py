"""A model call's place in the ledger: its limit holds before the provider is called, and the one
settlement every ending goes through (success, error, cancel; crash recovery in llm/upkeep.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from switchboard.errors import LimitRefused
from switchboard.idempotency.service import StoredResponse
from switchboard.limits import enforce
from switchboard.llm.context import PreparedCall
from switchboard.llm.outcomes import build_outcome, prompt_estimate
from switchboard.metering.outcome import CallOutcome, Settlement
from switchboard.observability import events

GATEWAY_CRASHED = "gateway_crashed"


def _model_max(call: PreparedCall) -> int:
    if call.endpoint == "embeddings":
        return 0
    from switchboard.upstream.prices import litellm_max_output

    return litellm_max_output(call.model.provider, call.model.model) or enforce.DEFAULT_MAX_OUTPUT


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


async def begin(state: Any, call: PreparedCall) -> None:
    """Holds the call's worst case against every limit that applies (402/429 when one does not fit),
    sets the output cap the gateway chose, and leaves what recovery needs with the idempotency claim.
    """
    call.call_id = os.urandom(16).hex()  # 128 random bits, as a uuid4's hex, without the UUID object
    limits = await state.limits.applying(
        call.economy_id, call.principal.user_id, call.room_id, call.agent_id, call.principal.api_key_id
    )
    record = recovery_record(call) if limits or call.claim is not None else None
    if limits:
        prices, markup = None, 0
        if any(limit.metric == "cost" for limit in limits):
            prices, markup = await state.call_sink.price_of(
                call.economy_id, call.model.provider, call.model.model
            )
        ask = enforce.Ask(
            endpoint=call.endpoint,
            prompt_tokens=prompt_estimate(call.body),
            own_cap=enforce.own_cap(call.endpoint, call.body),
            model_max=_model_max(call),
            prices=prices,
            markup_bps=markup,
        )
        try:
            call.hold, cap = await enforce.reserve(
                state.write_transactions,
                state.hold_leases,
                limits,
                ask,
                call_id=call.call_id,
                call=record,
                lease_seconds=state.settings.lease_seconds,
            )
        except LimitRefused:
            events.limit_refused(state)
            raise
        if cap is not None:
            call.body[enforce.cap_field(call.endpoint)] = cap
    if call.claim is not None and record is not None:
        await state.idempotency.attach(call.claim, record)


def limit_headers(call: PreparedCall) -> dict[str, str]:
    return call.hold.headers if call.hold is not None else {}


async def record_attempt(state: Any, call: PreparedCall, outcome: CallOutcome) -> None:
    """The record of an attempt the call moved on from (SPEC §14); the call's last attempt is
    recorded by `settle`, which also ends its holds and its idempotency claim."""
    await state.call_sink.record(outcome)
    events.attempt_moved_on(state)


async def settle(
    state: Any, call: PreparedCall, outcome: CallOutcome, stored: StoredResponse | None = None
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
        cost = await state.call_sink.record(outcome, settlement)
    finally:
        events.call_settled(state, call, outcome, cost)
        if call.hold is not None:
            await call.hold.stop()
        if call.claim is not None:
            await state.idempotency.forget(call.claim)
