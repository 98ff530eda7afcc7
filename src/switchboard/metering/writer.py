"""The usage writer: one task group-commits the records of concurrent calls, one transaction per batch."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from typing import Any, cast

from sqlalchemy import Engine, Table
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.config_file import ModelEntry
from switchboard.db.engine import make_sync_sqlite_engine
from switchboard.db.upsert import insert_for
from switchboard.errors import ServiceUnavailable
from switchboard.metering.economies import Economy, economies_by_id
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.outcome import CallOutcome, new_record_id
from switchboard.metering.pricing import Prices, compute_cost, find_prices, litellm_lookup, needs_litellm
from switchboard.metering.resolution import cache_generation

log = logging.getLogger("switchboard.metering.writer")

_TABLE = cast(Table, UsageRecordRow.__table__)
MAX_BATCH = 500
_MAX_LOOKUPS = 10_000
_MAX_COST = 2**63 - 1  # BIGINT
# Transient database trouble (failover, a dropped connection) is retried before giving up.
RETRY_DELAYS = (0.05, 0.2, 1.0)
# Economy manifests (markup, price overrides) are re-read at most this often: a batch of one call
# (concurrency 1) would otherwise pay a query for them. Matches the resolution cache's lifetime.
ECONOMY_TTL_SECONDS = 2.0
_OUTCOME_FIELDS = tuple(f.name for f in fields(CallOutcome))


@dataclass
class _Pending:
    outcome: CallOutcome
    record_id: uuid.UUID
    done: asyncio.Future[None]


def _consume_error(future: asyncio.Future[None]) -> None:
    # The caller may be gone (cancelled); keep asyncio from logging an unretrieved exception.
    if not future.cancelled():
        future.exception()


class UsageWriter:
    """`app.state.call_sink`. `record()` returns once the record is committed.

    While one batch commits, the records of other calls queue up and go into the next single
    transaction, so the number of commits grows far slower than the number of calls.
    """

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        catalog: Mapping[str, ModelEntry],
        queue_size: int = 10_000,
        max_batch: int = MAX_BATCH,
        sqlite_url: str | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        # On SQLite a batch is inserted and committed in one hop to a thread of its own; through
        # aiosqlite each statement (begin, insert, commit) is a hop, which dominates at concurrency 1.
        self._sync_engine = make_sync_sqlite_engine(sqlite_url) if sqlite_url else None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="usage-writer") if sqlite_url else None
        self._catalog = dict(catalog)
        self._queue: asyncio.Queue[_Pending | None] = asyncio.Queue(maxsize=max(1, queue_size))
        self._max_batch = max_batch
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._blocked_puts: set[asyncio.Task[None]] = set()
        self._litellm: dict[tuple[str, str], Prices] = {}
        self._economies: dict[uuid.UUID, Economy] = {}
        self._economies_until = 0.0
        self._economies_generation = -1
        self.batches = 0  # committed transactions, for tests and the benchmark
        self.records = 0

    @property
    def closing(self) -> bool:
        """True once shutdown began: no new records are taken, queued ones are still written."""
        return self._closing

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="usage-writer")

    async def record(self, outcome: CallOutcome) -> None:
        if outcome.occurred_at.tzinfo is None:
            raise ValueError("CallOutcome.occurred_at must be timezone-aware")
        if self._closing or self._task is None:
            raise ServiceUnavailable("the gateway is shutting down")
        pending = _Pending(outcome, new_record_id(), asyncio.get_running_loop().create_future())
        pending.done.add_done_callback(_consume_error)
        try:
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            # Backpressure: wait for room. Shielded, so a caller cancelled meanwhile still gets recorded.
            put = asyncio.create_task(self._queue.put(pending))
            self._blocked_puts.add(put)
            put.add_done_callback(self._blocked_puts.discard)
            await asyncio.shield(put)
        await asyncio.shield(pending.done)

    async def close(self) -> None:
        """Stop taking records, write every queued one, then end the writer task."""
        self._closing = True
        if self._blocked_puts:
            await asyncio.gather(*self._blocked_puts, return_exceptions=True)
        if self._task is None:
            return
        await self._queue.put(None)
        await self._task
        if self._thread is not None and self._sync_engine is not None:
            self._thread.shutdown(wait=True)
            self._sync_engine.dispose()

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self._max_batch:
                try:
                    item = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            try:
                await self._write(batch)
            except Exception as exc:  # the writer task must survive anything; callers get the error
                log.exception("usage batch of %d failed", len(batch))
                for pending in batch:
                    if not pending.done.done():
                        pending.done.set_exception(ServiceUnavailable("the usage record could not be stored"))
                del exc
            if stop:
                return

    async def _write(self, batch: list[_Pending]) -> None:
        await self._prefetch_litellm(batch)
        for delay in (*RETRY_DELAYS, None):
            try:
                await self._commit(batch)
            except Exception:
                if delay is None:
                    break
                log.warning("usage batch of %d failed; retrying in %ss", len(batch), delay, exc_info=True)
                await asyncio.sleep(delay)
                continue
            self._finish(batch)
            return
        # Still failing: write one by one so that a single bad record cannot sink the others.
        for pending in batch:
            try:
                await self._commit([pending])
            except Exception:
                log.exception("usage record %s could not be stored", pending.record_id)
                pending.done.set_exception(ServiceUnavailable("the usage record could not be stored"))
            else:
                self._finish([pending])

    def _finish(self, batch: list[_Pending]) -> None:
        self.batches += 1
        self.records += len(batch)
        for pending in batch:
            if not pending.done.done():
                pending.done.set_result(None)

    async def _commit(self, batch: list[_Pending]) -> None:
        if self._thread is not None:
            async with self._sessionmaker() as session:
                economies = await self._economies_of(session, batch)
            rows = [self._row(p, economies.get(p.outcome.economy_id)) for p in batch]
            await asyncio.get_running_loop().run_in_executor(self._thread, self._insert_in_thread, rows)
            return
        async with self._sessionmaker() as session, session.begin():
            economies = await self._economies_of(session, batch)
            rows = [self._row(p, economies.get(p.outcome.economy_id)) for p in batch]
            insert = insert_for(session.get_bind().dialect.name)
            # DO NOTHING: a retry after a commit whose acknowledgement was lost must not double a record.
            await session.execute(insert(_TABLE).on_conflict_do_nothing(), rows)

    def _insert_in_thread(self, rows: list[dict[str, Any]]) -> None:
        assert self._sync_engine is not None
        with self._sync_engine.begin() as conn:
            # DO NOTHING: a retry after a commit whose acknowledgement was lost must not double a record.
            conn.execute(sqlite.insert(_TABLE).on_conflict_do_nothing(), rows)

    async def _economies_of(self, session: AsyncSession, batch: list[_Pending]) -> dict[uuid.UUID, Economy]:
        now = time.monotonic()
        bind = session.get_bind()
        generation = cache_generation(bind if isinstance(bind, Engine) else bind.engine)
        if now >= self._economies_until or generation != self._economies_generation:
            self._economies.clear()
            self._economies_until = now + ECONOMY_TTL_SECONDS
            self._economies_generation = generation
        missing = {p.outcome.economy_id for p in batch} - self._economies.keys()
        if missing:
            self._economies.update(await economies_by_id(session, list(missing)))
        return self._economies

    async def _prefetch_litellm(self, batch: list[_Pending]) -> None:
        """litellm's cost map is consulted off the event loop (its first import is slow), once per model."""
        for pending in batch:
            key = (pending.outcome.provider, pending.outcome.model)
            if key in self._litellm:
                continue
            if needs_litellm(find_prices(*key, {}, self._catalog)):
                if len(self._litellm) >= _MAX_LOOKUPS:
                    self._litellm.clear()  # callers can name any model; keep the cache bounded
                self._litellm[key] = await asyncio.to_thread(litellm_lookup, *key)

    def _row(self, pending: _Pending, economy: Economy | None) -> dict[str, Any]:
        outcome = pending.outcome
        overrides = economy.price_overrides if economy is not None else {}
        markup = economy.markup_bps if economy is not None else 0
        key = (outcome.provider, outcome.model)
        prices = find_prices(*key, overrides, self._catalog, self._litellm.get(key, Prices(None, None, None)))
        cost = compute_cost(prices, outcome.prompt_tokens, outcome.completion_tokens, markup)
        if cost.nanos > _MAX_COST:
            # Absurd prices: storing the record (flagged unpriced) beats losing it to a column overflow.
            log.warning("cost of record %s exceeds the cost column; stored unpriced", pending.record_id)
            cost = replace(cost, nanos=0, priced=False)
        return {
            # A shallow copy: dataclasses.asdict deep-copies every field, which shows in profiles.
            **{name: getattr(outcome, name) for name in _OUTCOME_FIELDS},
            "id": pending.record_id,
            "cost": cost.nanos,
            "priced": cost.priced,
            "input_per_mtok": cost.input_per_mtok,
            "output_per_mtok": cost.output_per_mtok,
            "markup_bps": cost.markup_bps,
            "price_source": cost.source,
        }
