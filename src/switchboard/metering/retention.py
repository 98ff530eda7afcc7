"""Retention of raw usage records: records older than N days are deleted, their hourly and daily rollups kept.

Off unless `SWITCHBOARD_USAGE_RETENTION_DAYS` is set. The cut falls on a whole hour, so every hour
is either kept whole or gone whole, and summaries of whole hours (read from the rollups) stay exact
after a purge. The 5-minute rollups go with the records they sum: exports, record lists and summary
edges (the partial hours at either end of a range) only see what is still kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import CursorResult, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.kit.clock import utcnow
from switchboard.metering.models import UsageFiveMinuteRollupRow as M
from switchboard.metering.models import UsageRecordRow as R
from switchboard.metering.models import UsageRollupRow as U
from switchboard.metering.rollups import hour_of

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("switchboard.metering.retention")
PURGE_INTERVAL_SECONDS = 3600.0
# Records deleted per transaction: short enough not to hold up the usage writer for long.
BATCH = 5000
_HOUR = timedelta(hours=1)


def retention_cut(days: int, now: datetime | None = None) -> datetime:
    """Records that occurred before this (a whole hour) are past retention."""
    if days < 1:
        raise ValueError("retention is at least one day")
    return hour_of((now or utcnow()) - timedelta(days=days))


async def purge_records(
    sessionmaker: async_sessionmaker[AsyncSession], before: datetime, batch: int = BATCH
) -> int:
    """Delete the records that occurred before `before`, a batch per transaction, and their 5-minute rollups.

    Returns how many records.
    """
    async with sessionmaker() as session:
        # Every record is in a rollup row, and the rollups are far fewer: their economies are all.
        economies = list(await session.scalars(select(U.economy_id).distinct()))
    removed = 0
    for economy_id in economies:
        while True:
            oldest = (
                select(R.id)
                .where(R.economy_id == economy_id, R.occurred_at < before)
                .order_by(R.occurred_at)
                .limit(batch)
            )
            async with sessionmaker() as session, session.begin():
                result = await session.execute(delete(R).where(R.id.in_(oldest.scalar_subquery())))
                count = cast(CursorResult[Any], result).rowcount or 0
            removed += count
            if count < batch:
                break
        await _purge_five_minutes(sessionmaker, economy_id, before)
    return removed


async def _purge_five_minutes(
    sessionmaker: async_sessionmaker[AsyncSession], economy_id: object, before: datetime
) -> None:
    """The 5-minute rollups before `before`, an hour of them per transaction (the oldest first)."""
    while True:
        async with sessionmaker() as session, session.begin():
            oldest = await session.scalar(
                select(func.min(M.hour)).where(M.economy_id == economy_id, M.hour < before)
            )
            if oldest is None:
                return
            await session.execute(
                delete(M).where(M.economy_id == economy_id, M.hour < min(hour_of(oldest) + _HOUR, before))
            )


async def _purge_forever(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> None:
    # Jitter so that replicas started together do not all purge at once (if they do, no harm).
    await asyncio.sleep(random.uniform(0, PURGE_INTERVAL_SECONDS / 10))
    while True:
        try:
            cut = retention_cut(days)
            removed = await purge_records(sessionmaker, cut)
            if removed:
                log.info("usage retention: deleted %d records before %s (rollups kept)", removed, cut)
        except Exception:
            log.warning("usage retention: purging old records failed", exc_info=True)
        await asyncio.sleep(PURGE_INTERVAL_SECONDS)


def start(app: FastAPI, days: int | None) -> None:
    """The hourly purge task, when retention is on."""
    app.state.usage_retention = (
        asyncio.create_task(_purge_forever(app.state.sessionmaker, days), name="usage-retention")
        if days
        else None
    )


async def stop(app: FastAPI) -> None:
    task: asyncio.Task[None] | None = getattr(app.state, "usage_retention", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
