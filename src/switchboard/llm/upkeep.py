"""The pipeline's upkeep, every couple of seconds on each process, on one database connection:
the leases of this process's running calls renewed, the limits reloaded (a change on another
replica applies within that), and crash recovery (settlement/recovery.py, SPEC §13).
"""

from __future__ import annotations

import asyncio
import logging

from switchboard.kit.clock import utcnow
from switchboard.llm.services import Pipeline
from switchboard.settlement import recovery

log = logging.getLogger("switchboard.llm.upkeep")

# How often; at most this long for a limit changed on another replica to apply there. Also at most
# a third of the lease (lifecycle.py), so a live call's holds never run out.
UPKEEP_SECONDS = 2.0


async def upkeep(pipeline: Pipeline) -> int:
    """Renews live holds, reloads the limits and recovers every dead call found; returns how many
    records it wrote."""
    if len(pipeline.hold_leases):
        async with pipeline.engine.begin() as conn:
            await pipeline.hold_leases.renew(conn)
    if pipeline.allowances is not None:
        await pipeline.allowances.tick()
    now = utcnow()
    # One checkout for all three reads: an idle process holds no more connections than before.
    async with pipeline.engine.connect() as conn:
        await pipeline.limits.reload(conn)
        dead = await recovery.find_dead_calls(conn, now)
    await recovery.drop_dead_allowances(pipeline.engine, dead, now)
    dead = await recovery.drop_unreadable(pipeline.engine, pipeline.idempotency, dead, now)
    return await recovery.recover(pipeline.call_sink, dead)


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
