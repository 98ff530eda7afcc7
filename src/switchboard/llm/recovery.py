"""Crash recovery (SPEC §13): a call whose replica died leaves its limit holds and idempotency claim
behind; once their lease has run out, one `abandoned` record is written for it and both are freed.

Every replica sweeps; the record's id is derived from the call's id, and it is written only in the
transaction that frees what the dead call held, so two sweepers (or a sweeper and a late settlement)
write it once.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from switchboard.kit.clock import utcnow
from switchboard.limits import ledger
from switchboard.metering.outcome import CallOutcome, Settlement
from switchboard.metering.spool import outcome_from_json

log = logging.getLogger("switchboard.llm.recovery")


def abandoned_record_id(call_id: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:abandoned:{call_id}")


def _abandoned(record: dict[str, Any]) -> CallOutcome:
    outcome = outcome_from_json({**record, "occurred_at": utcnow().isoformat()})
    return outcome


async def sweep(state: Any) -> int:
    """Recovers every dead call found now; returns how many records it handed to the writer."""
    now = utcnow()
    written = 0
    for call_id, record in await ledger.dead_calls(state.engine, now):
        if record is None:
            continue
        settlement = Settlement(call_id=call_id, abandoned=True, record_id=abandoned_record_id(call_id))
        await state.call_sink.record(_abandoned(record), settlement)
        written += 1
    for claim, record in await state.idempotency.dead_calls(now):
        call_id = str(record.get("call_id") or claim.token)
        settlement = Settlement(claim=claim, abandoned=True, record_id=abandoned_record_id(call_id))
        await state.call_sink.record(_abandoned(record), settlement)
        written += 1
    return written


async def sweep_forever(state: Any, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        try:
            if not state.db_outage.down:
                await sweep(state)
        except Exception:
            log.warning("recovering abandoned calls failed; retrying", exc_info=True)
