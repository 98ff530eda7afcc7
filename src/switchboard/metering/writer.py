"""The usage writer: one task group-commits the records of concurrent calls, one transaction per batch."""

from __future__ import annotations

import asyncio
import logging
import operator
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import cast

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.config_file import ModelEntry
from switchboard.db.batch_insert import PostgresBatchInsert, SqliteBatchInsert, batch_insert
from switchboard.db.driver_statements import driver_ready
from switchboard.db.outage import DatabaseOutage, is_connection_error
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import InlineConnection, LedgerConnection, WriteTransactions
from switchboard.errors import ServiceUnavailable
from switchboard.idempotency.service import IdempotencyStore
from switchboard.kit.clock import utcnow
from switchboard.limits import ledger
from switchboard.limits.postgres_settlement import SettlingStatement
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.outcome import CallOutcome, Settlement, new_record_id
from switchboard.metering.price_book import MAX_COST, PriceBook
from switchboard.metering.pricing import Prices, compute_cost
from switchboard.metering.rollups import RecordsExisted, RollupKeeper
from switchboard.metering.spool import UsageSpool, read_file
from switchboard.observability import events

log = logging.getLogger("switchboard.metering.writer")

_TABLE = cast(Table, UsageRecordRow.__table__)
MAX_BATCH = 500
# Transient database trouble (failover, a dropped connection) is retried before giving up.
RETRY_DELAYS = (0.05, 0.2, 1.0)
_OUTCOME_FIELDS = tuple(f.name for f in fields(CallOutcome))
_outcome_values = operator.attrgetter(*_OUTCOME_FIELDS)
# The order of the values `_row` hands to the insert.
_COLUMNS = (
    "id",
    *_OUTCOME_FIELDS,
    "cost",
    "priced",
    "input_per_mtok",
    "output_per_mtok",
    "markup_bps",
    "price_source",
    "prices",
)
_COST_INDEX = _COLUMNS.index("cost")


@dataclass
class _Pending:
    outcome: CallOutcome
    record_id: uuid.UUID
    done: asyncio.Future[None]
    settlement: Settlement | None = None
    cost: int | None = None  # nano-units, once costed


@dataclass(frozen=True)
class _PriceProbe:
    """Just what price lookups read of an outcome."""

    economy_id: uuid.UUID
    provider: str
    model: str
    service_tier: str | None = None  # a reservation is priced at the default tier


def _actual(metric: str, outcome: CallOutcome, cost: int) -> int:
    """What a finished call counts against a limit of `metric`."""
    if metric == "requests":
        return 1
    if metric == "tokens":
        return outcome.prompt_tokens + outcome.completion_tokens
    return cost


@dataclass
class _CatchUp:
    """Queued like a record, so that replaying the spool never overlaps a batch on the connection."""

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
        outage: DatabaseOutage | None = None,
        spool: UsageSpool | None = None,
        idempotency: IdempotencyStore | None = None,
        transactions: WriteTransactions | None = None,
    ) -> None:
        engine = sessionmaker.kw.get("bind")
        if not isinstance(engine, AsyncEngine):
            raise TypeError("the usage writer needs a sessionmaker bound to an AsyncEngine")
        self._sessionmaker = sessionmaker
        self._async_engine = engine
        self._engine = engine.sync_engine
        self._idempotency = idempotency
        self._transactions = transactions or WriteTransactions(engine)
        # Every insert also adds its records to the hourly and daily rollups, in the same transaction.
        self._rollups = RollupKeeper(_COLUMNS, engine.dialect)
        self._insert = batch_insert(
            engine,
            _TABLE,
            _COLUMNS,
            sqlite_after=self._rollups.after_sqlite_insert if self._rollups.postgres is None else None,
            postgres_statement=self._rollups.postgres,
        )
        self._core_insert = driver_ready(insert_for(engine.dialect.name)(_TABLE).on_conflict_do_nothing())
        self._book = PriceBook(sessionmaker, self._engine, catalog)
        self._queue: asyncio.Queue[_Pending | _CatchUp | None] = asyncio.Queue(maxsize=max(1, queue_size))
        self._outage = outage
        self._spool = spool
        self._max_batch = max_batch
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._blocked_puts: set[asyncio.Task[None]] = set()
        self.batches = 0  # committed transactions, for tests and the benchmark
        self.records = 0

    @property
    def closing(self) -> bool:
        """True once shutdown began: no new records are taken, queued ones are still written."""
        return self._closing

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="usage-writer")

    async def record(self, outcome: CallOutcome, settlement: Settlement | None = None) -> int | None:
        """Returns once the record and its settlement (limit holds, idempotent answer) are committed;
        with the record's cost. One spooled while the database is away is costed from the prices
        read before (PriceBook.known_cost): None when its economy was never read."""
        if outcome.occurred_at.tzinfo is None:
            raise ValueError("CallOutcome.occurred_at must be timezone-aware")
        if self._closing or self._task is None:
            raise ServiceUnavailable("the gateway is shutting down")
        record_id = (
            settlement.record_id if settlement is not None and settlement.record_id else new_record_id()
        )
        pending = _Pending(outcome, record_id, asyncio.get_running_loop().create_future(), settlement)
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
        if pending.cost is None:  # spooled: costed again when written, but metrics and the log want it now
            return 0 if outcome.cache_hit else await self._book.known_cost(outcome)
        return pending.cost

    async def catch_up(self) -> None:
        """Commits every spooled record (this process's and those of dead ones); raises if it cannot."""
        if self._spool is None or self._task is None:
            return
        marker = _CatchUp(asyncio.get_running_loop().create_future())
        await self._queue.put(marker)
        await marker.done

    async def close(self) -> None:
        """Stop taking records, write every queued one, then end the writer task."""
        self._closing = True
        if self._blocked_puts:
            await asyncio.gather(*self._blocked_puts, return_exceptions=True)
        if self._task is not None:
            await self._queue.put(None)
            await self._task
        await self._insert.close()
        if self._spool is not None:
            self._spool.close()

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            if first is None:
                return
            if isinstance(first, _CatchUp):
                await self._catch_up(first)
                continue
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
                if isinstance(item, _CatchUp):
                    # Runs after this batch, in its turn: put back at once (the queue has room for it).
                    self._queue.put_nowait(item)
                    break
                batch.append(item)
            try:
                started = time.perf_counter()
                await self._write(batch)
                events.usage_batch_written(self, started, self._queue.qsize())
            except Exception as exc:  # the writer task must survive anything; callers get the error
                log.exception("usage batch of %d failed", len(batch))
                for pending in batch:
                    if not pending.done.done():
                        pending.done.set_exception(ServiceUnavailable("the usage record could not be stored"))
                del exc
            if stop:
                return

    async def _write(self, batch: list[_Pending]) -> None:
        if self._outage is not None and self._outage.down:
            self._to_spool(batch)  # the database is away: straight to the spool, no doomed retries
            return
        for delay in (*RETRY_DELAYS, None):
            try:
                await self._commit(batch)
            except Exception as error:
                if self._outage is not None and is_connection_error(error):
                    if delay is None:
                        self._outage.note_failure(error)
                        self._to_spool(batch)
                        return
                    await asyncio.sleep(delay)
                    continue
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

    def _to_spool(self, batch: list[_Pending]) -> None:
        """Durable on local disk until the database returns; the calls go on as if committed."""
        assert self._spool is not None
        try:
            self._spool.append([(pending.record_id, pending.outcome) for pending in batch])
        except OSError as error:
            log.error("usage spool %s could not be written: %s", self._spool.path, error.strerror)
            for pending in batch:
                if not pending.done.done():
                    pending.done.set_exception(ServiceUnavailable("the usage record could not be stored"))
            return
        self._finish(batch)

    async def _catch_up(self, marker: _CatchUp) -> None:
        assert self._spool is not None
        try:
            await self._replay(self._spool.own_records())
            self._spool.clear()
            for path, handle in self._spool.orphans():
                with handle:
                    await self._replay(read_file(handle))
                path.unlink()
            if self._outage is not None:
                self._outage.down = False  # here, in the writer's turn: no batch can slip into the spool
        except Exception as error:
            if not marker.done.done():
                marker.done.set_exception(error)
            return
        if not marker.done.done():
            marker.done.set_result(None)

    async def _replay(self, records: list[tuple[uuid.UUID, CallOutcome]]) -> None:
        """Each spooled record once: ids are kept, and an id already stored is skipped."""
        loop = asyncio.get_running_loop()
        for start in range(0, len(records), self._max_batch):
            chunk = [
                _Pending(outcome, record_id, loop.create_future())
                for record_id, outcome in records[start : start + self._max_batch]
            ]
            await self._commit(chunk)
            for pending in chunk:
                pending.done.cancel()
        if records:
            log.warning("usage spool: %d record(s) written to the database", len(records))

    def _finish(self, batch: list[_Pending]) -> None:
        self.batches += 1
        self.records += len(batch)
        for pending in batch:
            if not pending.done.done():
                pending.done.set_result(None)

    async def price_of(self, economy_id: uuid.UUID, provider: str, model: str) -> tuple[Prices, int]:
        """The prices and markup a record of this call will be costed with (for a limit's estimate)."""
        economy = (await self._book.economies({economy_id})).get(economy_id)
        prices = await self._book.prices(_PriceProbe(economy_id, provider, model), economy)
        return prices, economy.markup_bps if economy is not None else 0

    async def _commit(self, batch: list[_Pending]) -> None:
        try:
            await self._commit_once(batch)
        except RecordsExisted:
            # A batch retried (or replayed from the spool) whose earlier commit went through after
            # all: those records, and what committed with them, are stored. Write only the others.
            fresh = await self._not_stored(batch)
            if fresh:
                await self._commit_once(fresh)

    async def _not_stored(self, batch: list[_Pending]) -> list[_Pending]:
        async with self._sessionmaker() as session:
            stored = set(
                await session.scalars(
                    select(UsageRecordRow.id).where(UsageRecordRow.id.in_([p.record_id for p in batch]))
                )
            )
        return [pending for pending in batch if pending.record_id not in stored]

    async def _commit_once(self, batch: list[_Pending]) -> None:
        if any(pending.settlement is not None for pending in batch):
            await self._commit_with_settlements(batch)
            return
        rows = await self._rows(batch)
        # DO NOTHING on a known id: a retry after a commit whose acknowledgement was lost must not
        # double a record.
        await self._insert.insert(rows)

    async def _rows(self, batch: list[_Pending]) -> list[tuple[object, ...]]:
        economies = await self._book.economies({p.outcome.economy_id for p in batch})
        rows = []
        for pending in batch:
            outcome = pending.outcome
            economy = economies.get(outcome.economy_id)
            prices = self._book.kept(outcome)
            if prices is None:
                prices = await self._book.prices(outcome, economy)
            rows.append(self._row(pending, prices, economy.markup_bps if economy is not None else 0))
        return rows

    async def _commit_with_settlements(self, batch: list[_Pending]) -> None:
        """Records, limit settlements and idempotent answers of the batch in one transaction (SPEC §13)."""
        if isinstance(self._insert, PostgresBatchInsert) and all(
            p.settlement is None or (p.settlement.claim is None and not p.settlement.abandoned) for p in batch
        ):
            await self._settle_in_one_statement(batch)
            return
        rows = await self._rows(batch)
        now = utcnow()
        async with self._transactions.begin() as conn:
            kept: list[tuple[object, ...]] = []
            actuals: list[ledger.Actual] = []
            recovered: list[tuple[object, ...]] = []
            for pending, row in zip(batch, rows, strict=True):
                settlement = pending.settlement
                if settlement is not None and settlement.abandoned:
                    if await self._free_dead(conn, settlement, now):
                        recovered.append(row)
                    continue
                kept.append(row)
                if settlement is None:
                    continue
                if settlement.claim is not None and self._idempotency is not None:
                    if settlement.stored is not None:
                        await self._idempotency.complete_in(conn, settlement.claim, settlement.stored)
                    else:
                        await self._idempotency.release_in(conn, settlement.claim)
                call_id = settlement.call_id
                if call_id is not None:
                    cost = int(row[_COST_INDEX])  # type: ignore[call-overload]
                    outcome = pending.outcome
                    actuals.extend(
                        ledger.Actual(
                            limit, _actual(limit.metric, outcome, cost), outcome.occurred_at, call_id
                        )
                        for limit in settlement.limits
                    )
            if recovered:
                kept.extend(await self._not_yet_stored(conn, recovered))
            if kept:
                if isinstance(conn, InlineConnection) and isinstance(self._insert, SqliteBatchInsert):
                    # The very insert (and rollups) of a batch without settlements, in this transaction.
                    self._insert.insert_on(conn.driver, kept)
                else:
                    await self._rollups.insert_in(conn, self._core_insert, kept)
            await ledger.settle(conn, actuals)

    async def _settle_in_one_statement(self, batch: list[_Pending]) -> None:
        """PostgreSQL, holds only (no idempotent answer, no recovery): the records' own statement with
        the settlement in front, one round trip like a batch without limits."""
        assert isinstance(self._insert, PostgresBatchInsert) and self._rollups.postgres is not None
        rows = await self._rows(batch)
        actuals: list[tuple[uuid.UUID, ledger.Actual]] = []
        for pending, row in zip(batch, rows, strict=True):
            settlement = pending.settlement
            if settlement is None or settlement.call_id is None:
                continue
            cost = int(row[_COST_INDEX])  # type: ignore[call-overload]
            outcome = pending.outcome
            call_id, at = settlement.call_id, outcome.occurred_at
            actuals.extend(
                (pending.record_id, ledger.Actual(limit, _actual(limit.metric, outcome, cost), at, call_id))
                for limit in settlement.limits
            )
        statement = SettlingStatement(self._rollups.postgres, actuals, utcnow())
        await self._insert.insert(rows, statement)

    async def _not_yet_stored(
        self, conn: LedgerConnection, rows: list[tuple[object, ...]]
    ) -> list[tuple[object, ...]]:
        """A dead call's `abandoned` record, once: recovery frees its holds and its idempotency key
        separately (and every replica sweeps), each bringing the same record id. What it freed is
        committed either way; the record is stored by the first."""
        ids = list(dict.fromkeys(row[0] for row in rows))
        stored = set((await conn.execute(select(_TABLE.c.id).where(_TABLE.c.id.in_(ids)))).scalars())
        fresh: list[tuple[object, ...]] = []
        for row in rows:
            if row[0] not in stored:
                stored.add(row[0])
                fresh.append(row)
        return fresh

    async def _free_dead(self, conn: LedgerConnection, settlement: Settlement, now: datetime) -> bool:
        freed = False
        if settlement.call_id is not None:
            freed = await ledger.release_dead_holds(conn, settlement.call_id, now)
        if settlement.claim is not None and self._idempotency is not None:
            freed = await self._idempotency.release_dead_in(conn, settlement.claim, now) or freed
        return freed

    def _row(self, pending: _Pending, prices: Prices, markup: int) -> tuple[object, ...]:
        """The record's values in `_COLUMNS` order."""
        outcome = pending.outcome
        cost = compute_cost(prices, outcome, markup)
        if outcome.cache_hit:  # no provider was paid (SPEC §23); the prices stay on the record
            cost = replace(cost, nanos=0)
        elif cost.nanos > MAX_COST:
            # Absurd prices: storing the record (flagged unpriced) beats losing it to a column overflow.
            log.warning("cost of record %s exceeds the cost column; stored unpriced", pending.record_id)
            cost = replace(cost, nanos=0, priced=False)
        pending.cost = cost.nanos
        return (
            pending.record_id,
            *_outcome_values(outcome),
            cost.nanos,
            cost.priced,
            cost.input_per_mtok,
            cost.output_per_mtok,
            cost.markup_bps,
            cost.source,
            cost.prices,
        )
