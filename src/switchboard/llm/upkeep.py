"""The pipeline's upkeep, every couple of seconds on each process, on one database connection:
the leases of this process's running calls renewed, the limits reloaded (a change on another
replica applies within that), and crash recovery.

Crash recovery (SPEC §13): a call whose replica died leaves its limit holds and idempotency claim
behind; once their lease has run out, one `abandoned` record is written for it and both are freed.
Every replica sweeps; the record's id is derived from the call's id, and the writer commits it only
in the transaction that frees what the dead call held, so two sweepers (or a sweeper and a late
settlement) write it once.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from switchboard.idempotency.service import IdempotencyStore
from switchboard.kit.clock import utcnow
from switchboard.limits import ledger
from switchboard.llm.services import Pipeline
from switchboard.metering.outcome import CallOutcome, Settlement
from switchboard.metering.spool import outcome_from_json

log = logging.getLogger("switchboard.llm.upkeep")

# How often; at most this long for a limit changed on another replica to apply there. Also at most
# a third of the lease (lifecycle.py), so a live call's holds never run out.
UPKEEP_SECONDS = 2.0


def abandoned_record_id(call_id: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:abandoned:{call_id}")


def _abandoned(record: dict[str, Any]) -> CallOutcome:
    return outcome_from_json({**record, "occurred_at": utcnow().isoformat()})


async def upkeep(pipeline: Pipeline) -> int:
    """Renews live holds, reloads the limits and recovers every dead call found; returns how many
    records it wrote."""
    if len(pipeline.hold_leases):
        async with pipeline.engine.begin() as conn:
            await pipeline.hold_leases.renew(conn)
    now = utcnow()
    # One checkout for all three reads: an idle process holds no more connections than before.
    async with pipeline.engine.connect() as conn:
        await pipeline.limits.reload(conn)
        dead_holds = await ledger.dead_calls(conn, now)
        dead_claims = await IdempotencyStore.dead_calls(conn, now)
    written = 0
    for call_id, record in dead_holds:
        if record is None:
            continue
        settlement = Settlement(call_id=call_id, abandoned=True, record_id=abandoned_record_id(call_id))
        await pipeline.call_sink.record(_abandoned(record), settlement)
        written += 1
    for claim, record in dead_claims:
        call_id = str(record.get("call_id") or claim.token)
        settlement = Settlement(claim=claim, abandoned=True, record_id=abandoned_record_id(call_id))
        await pipeline.call_sink.record(_abandoned(record), settlement)
        written += 1
    return written


async def upkeep_forever(pipeline: Pipeline, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        if pipeline.db_outage.down:
            continue
        try:
            await upkeep(pipeline)
        except Exception:
            log.warning(
                "the pipeline's upkeep failed (limits reload, crash recovery); retrying", exc_info=True
            )
