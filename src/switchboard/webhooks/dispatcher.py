"""The dispatcher: one task per process that turns the pipeline's events into outbox rows and sends
the outbox, shared by every replica and worker.

Delivery is at least once. A row is claimed by pushing its `next_attempt_at` a lease ahead, in one
UPDATE over the due rows (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so replicas take disjoint rows;
SQLite: the statement holds the one write lock). A replica that dies mid-attempt leaves the row due
again once the lease has passed. A failed attempt is retried after `first_retry` seconds, doubling
up to an hour, for 24 hours from the event; then the row is `failed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta
from typing import Any, cast

import anyio
from sqlalchemy import Table, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.db.outage import is_connection_error
from switchboard.kit.clock import utcnow
from switchboard.kit.crypto import CryptoError, Keyring
from switchboard.limits.rules import EPOCH
from switchboard.webhooks import thresholds
from switchboard.webhooks.hub import SEEN_KEPT, Pending, WebhookHub
from switchboard.webhooks.models import DeliveryRow, EventMarkRow, WebhookRow
from switchboard.webhooks.outbox import PENDING, enqueue, first_time, message_id
from switchboard.webhooks.secrets import open_secret
from switchboard.webhooks.sender import Attempt, Sender

log = logging.getLogger("switchboard.webhooks")

_DELIVERIES = cast(Table, DeliveryRow.__table__)
_WEBHOOKS = cast(Table, WebhookRow.__table__)
_MARKS = cast(Table, EventMarkRow.__table__)
POLL_SECONDS = 1.0  # how soon another replica's event (or a retry come due) is sent, at most
LEASE = timedelta(seconds=60)  # an attempt takes at most 10 s; a claim older than this is a dead one's
BATCH = 16
RETRY_FOR = timedelta(hours=24)
# The delivery log keeps finished deliveries this long; a mark outlives the longest window (a month).
KEEP_LOG = timedelta(days=30)
KEEP_MARKS = timedelta(days=40)
PURGE_SECONDS = 3600.0
MAX_DELAY_SECONDS = 3600.0
DELIVERED, FAILED = "delivered", "failed"


def retry_delay(attempts: int, first: float) -> float:
    """Seconds after the `attempts`-th failed attempt: `first`, then doubling, at most an hour."""
    return min(first * float(2 ** min(attempts - 1, 30)), MAX_DELAY_SECONDS)


class Dispatcher:
    def __init__(
        self,
        hub: WebhookHub,
        sessionmaker: async_sessionmaker[AsyncSession],
        engine: AsyncEngine,
        sender: Sender,
        keyring: Keyring,
        *,
        first_retry: float,
        outage: Any = None,
    ) -> None:
        self._hub = hub
        self._sessionmaker = sessionmaker
        self._engine = engine
        self._sender = sender
        self._keyring = keyring
        self._first_retry = first_retry
        self._outage = outage
        self._poll = min(POLL_SECONDS, max(first_retry, 0.05))
        self._reloaded = 0.0
        self._purged = -PURGE_SECONDS  # at the first tick
        # Thresholds this process has seen marked: the next settlement does not try them again.
        self._marked: set[tuple[str, datetime, int]] = set()
        self._lock = asyncio.Lock()

    async def run_forever(self) -> None:
        hub = self._hub
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(hub.woken.wait(), timeout=self._poll)
            hub.woken.clear()
            if self._outage is not None and self._outage.down:
                continue
            try:
                await self.tick()
            except Exception as error:
                if is_connection_error(error) and self._outage is not None and self._outage.enabled:
                    self._outage.note_failure(error)  # said once, by the outage; no traceback a second
                    continue
                log.warning("webhook dispatch failed; retrying", exc_info=True)

    async def tick(self) -> None:
        """Everything handed over before it is written, and every delivery due is attempted, when it
        returns (ticks never overlap: a test's flush waits for the loop's)."""
        async with self._lock:
            await self._tick()

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        if self._hub.stale or loop.time() - self._reloaded >= 2.0:
            await self.reload()
            self._reloaded = loop.time()
        await self._write_events()
        if self._hub.settled:
            settled, self._hub.settled = self._hub.settled, {}
            for event in await thresholds.crossed(self._engine, list(settled.values())):
                key = (event.subject, event.window, event.threshold)
                if key not in self._marked:
                    await self._write_once(event)
                    if len(self._marked) >= SEEN_KEPT:
                        self._marked.clear()
                    self._marked.add(key)
        if self._hub.endpoints:
            while await self._deliver_due():
                pass
        if loop.time() - self._purged >= PURGE_SECONDS:
            self._purged = loop.time()
            await self.purge()

    async def purge(self) -> None:
        """Finished deliveries past KEEP_LOG, marks of windows long over; hourly on every replica
        (deleting what another deleted already is nothing)."""
        now = utcnow()
        async with self._engine.begin() as conn:
            await conn.execute(
                delete(_DELIVERIES).where(
                    _DELIVERIES.c.status != PENDING, _DELIVERIES.c.created_at < now - KEEP_LOG
                )
            )
            # A `total` limit's marks (window EPOCH) are kept: its window never ends.
            await conn.execute(
                delete(_MARKS).where(_MARKS.c.window_start > EPOCH, _MARKS.c.window_start < now - KEEP_MARKS)
            )

    async def reload(self) -> None:
        """The subscribed event types, read afresh (a handful of rows)."""
        hub = self._hub
        hub.stale = False
        async with self._engine.connect() as conn:
            rows = (await conn.execute(select(_WEBHOOKS.c.events, _WEBHOOKS.c.active))).all()
        hub.wanted = frozenset(name for row in rows if row.active for name in row.events)
        hub.endpoints = len(rows)

    async def _write_events(self) -> None:
        pending, self._hub.pending = self._hub.pending, []
        for event in pending:
            await self._write_once(event)

    async def _write_once(self, event: Pending) -> None:
        async with self._sessionmaker() as session, session.begin():
            if await first_time(session, event.event_type, event.subject, event.window, event.threshold):
                await enqueue(session, event.event_type, event.data, event.economy_id)

    async def _deliver_due(self) -> bool:
        """Sends one batch of due deliveries; True when the batch was full (more may be due)."""
        now = utcnow()
        async with self._engine.connect() as conn:
            due = await conn.scalar(
                select(func.min(_DELIVERIES.c.next_attempt_at)).where(_DELIVERIES.c.status == PENDING)
            )
        if due is None or due > now:
            return False
        picked = (
            select(_DELIVERIES.c.id)
            .where(_DELIVERIES.c.status == PENDING, _DELIVERIES.c.next_attempt_at <= now)
            .order_by(_DELIVERIES.c.next_attempt_at)
            .limit(BATCH)
            .with_for_update(skip_locked=True)
        )
        claim = (
            update(_DELIVERIES)
            .where(_DELIVERIES.c.id.in_(picked.scalar_subquery()))
            .values(next_attempt_at=now + LEASE)
            .returning(
                _DELIVERIES.c.id,
                _DELIVERIES.c.webhook_id,
                _DELIVERIES.c.body,
                _DELIVERIES.c.attempts,
                _DELIVERIES.c.created_at,
            )
        )
        async with self._engine.begin() as conn:
            claimed = (await conn.execute(claim)).all()
            if not claimed:
                return False
            hooks = {
                row.id: row
                for row in await conn.execute(
                    select(_WEBHOOKS.c.id, _WEBHOOKS.c.url, _WEBHOOKS.c.sealed_secret).where(
                        _WEBHOOKS.c.id.in_({row.webhook_id for row in claimed})
                    )
                )
            }
        try:
            results = await asyncio.gather(
                *(self._attempt(row, hooks.get(row.webhook_id)) for row in claimed)
            )
        except asyncio.CancelledError:
            # Shutting down: the rows are due again at once (another replica, or this one restarted),
            # not a lease later. An attempt cut short may have arrived: at least once, not exactly.
            with anyio.CancelScope(shield=True):
                async with self._engine.begin() as conn:
                    await conn.execute(
                        update(_DELIVERIES)
                        .where(_DELIVERIES.c.id.in_([row.id for row in claimed]))
                        .values(next_attempt_at=now)
                    )
            raise
        async with self._engine.begin() as conn:
            for row, result in zip(claimed, results, strict=True):
                await conn.execute(
                    update(_DELIVERIES)
                    .where(_DELIVERIES.c.id == row.id)
                    # Counted in SQL: two senders of one row (which claiming rules out) would show as 2.
                    .values(
                        attempts=_DELIVERIES.c.attempts + 1,
                        **self._outcome(row.attempts + 1, row.created_at, result),
                    )
                )
        return len(claimed) == BATCH

    async def _attempt(self, row: Any, hook: Any) -> Attempt:
        if hook is None:  # deleted meanwhile: its rows go with it (the update finds none)
            return Attempt(False, None, "deleted")
        try:
            secret = open_secret(self._keyring, hook.id, hook.sealed_secret)
        except CryptoError:
            log.error("webhook %s: its signing secret cannot be decrypted (is its key configured?)", hook.id)
            return Attempt(False, None, "secret_unreadable")
        return await self._sender.send(hook.url, message_id(row.id), row.body, secret)

    def _outcome(self, attempts: int, created_at: datetime, result: Attempt) -> dict[str, Any]:
        now = utcnow()
        values: dict[str, Any] = {
            "last_attempt_at": now,
            "response_status": result.status,
            "last_error": result.error,
        }
        if result.ok:
            return {**values, "status": DELIVERED, "delivered_at": now, "next_attempt_at": None}
        following = now + timedelta(seconds=retry_delay(attempts, self._first_retry))
        if following > created_at + RETRY_FOR:
            return {**values, "status": FAILED, "next_attempt_at": None}
        return {**values, "next_attempt_at": following}
