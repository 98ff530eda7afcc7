"""Audit retention: whole days purged from the oldest end, and a purge event that anchors the rest.

The purge and its event are one transaction under the chain head's lock. The event records the hash
of the last purged event (`anchor`): the first event kept names it as its `prev_hash`, so `audit
verify` starts the chain there instead of at the genesis hash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, cast

from sqlalchemy import Connection, Table, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.audit.chain import HEAD_ID, append
from switchboard.audit.events import Change, Origin, rfc3339
from switchboard.audit.models import AuditChainHead, AuditEventRow
from switchboard.kit.clock import utcnow

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("switchboard.audit.retention")
PURGE_ACTION = "audit.purge"
PURGE_INTERVAL_SECONDS = 3600.0
_E = cast(Table, AuditEventRow.__table__)


def cut_for(days: int, now: datetime | None = None) -> datetime:
    """Events before this midnight (UTC) are past retention: whole days go, never part of one."""
    moment = (now or utcnow()) - timedelta(days=days)
    return datetime(moment.year, moment.month, moment.day, tzinfo=UTC)


def purge_before(connection: Connection, before: datetime, origin: Origin) -> int:
    """Delete the events before `before` and append the purge event, in the connection's transaction."""
    head = cast(Table, AuditChainHead.__table__)
    # Lock the head first, so no append slips between the anchor read and the delete.
    connection.execute(update(head).where(head.c.id == HEAD_ID).values(seq=head.c.seq))
    last = connection.execute(
        select(_E.c.seq, _E.c.hash).where(_E.c.at < before).order_by(_E.c.seq.desc()).limit(1)
    ).first()
    if last is None:
        return 0
    count = connection.execute(select(func.count()).select_from(_E).where(_E.c.seq <= last.seq)).scalar_one()
    connection.execute(delete(_E).where(_E.c.seq <= last.seq))
    append(
        connection,
        origin,
        Change(
            action=PURGE_ACTION,
            target_type="audit",
            target_id=None,
            changes={
                "anchor": [None, last.hash],
                "purged_before": [None, rfc3339(before)],
                "events": [None, int(count)],
            },
        ),
    )
    return int(count)


async def purge(sessionmaker: async_sessionmaker[AsyncSession], days: int, origin: Origin) -> int:
    async with sessionmaker() as session, session.begin():
        connection = await session.connection()
        return await connection.run_sync(purge_before, cut_for(days), origin)


async def _purge_forever(sessionmaker: async_sessionmaker[AsyncSession], days: int) -> None:
    # Jitter so that replicas started together do not all purge at once (the head lock orders them).
    await asyncio.sleep(random.uniform(0, PURGE_INTERVAL_SECONDS / 10))
    while True:
        try:
            removed = await purge(sessionmaker, days, Origin())
            if removed:
                log.info("audit retention: purged %d events older than %d days", removed, days)
        except Exception:
            log.warning("audit retention: purge failed", exc_info=True)
        await asyncio.sleep(PURGE_INTERVAL_SECONDS)


def start(app: FastAPI, days: int | None) -> None:
    app.state.audit_retention = (
        asyncio.create_task(_purge_forever(app.state.sessionmaker, days), name="audit-retention")
        if days
        else None
    )


async def stop(app: FastAPI) -> None:
    task: asyncio.Task[None] | None = getattr(app.state, "audit_retention", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
