"""The usage writer: one task group-commits the records of concurrent calls, one transaction per batch.

The queue, its retries and the spool are metering's; what a batch's transaction writes (the records,
their rollups and what each call's ending settles with them) is `settlement/`'s, handed in as the
writer's `BatchCommit`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from switchboard.db.outage import DatabaseOutage, is_connection_error
from switchboard.errors import ServiceUnavailable
from switchboard.metering.outcome import CallOutcome, new_record_id
from switchboard.metering.price_book import PriceBook
from switchboard.metering.pricing import Prices
from switchboard.metering.record_rows import RecordRows
from switchboard.metering.spool import UsageSpool, read_file
from switchboard.observability import events

log = logging.getLogger("switchboard.metering.writer")

MAX_BATCH = 500
# Transient database trouble (failover, a dropped connection) is retried before giving up.
RETRY_DELAYS = (0.05, 0.2, 1.0)


class Settles(Protocol):
    """What the writer reads of a settlement: the id its record must have, if any (recovery's)."""

    @property
    def record_id(self) -> uuid.UUID | None: ...


S = TypeVar("S", bound=Settles)


@dataclass
class Pending(Generic[S]):
    """A record waiting for its batch's commit, with what the call's ending settles with it."""

    outcome: CallOutcome
    record_id: uuid.UUID
    done: asyncio.Future[None]
    settlement: S | None = None
    cost: int | None = None  # nano-units, once costed


class BatchCommit(Protocol[S]):
    """One transaction per batch; a record whose id is already stored is not written again."""

    async def commit(self, batch: list[Pending[S]]) -> None: ...

    async def close(self) -> None: ...


@dataclass
class _CatchUp:
    """Queued like a record, so that replaying the spool never overlaps a batch on the connection."""

    done: asyncio.Future[None]


def _consume_error(future: asyncio.Future[None]) -> None:
    # The caller may be gone (cancelled); keep asyncio from logging an unretrieved exception.
    if not future.cancelled():
        future.exception()


class UsageWriter(Generic[S]):
    """`app.state.call_sink` (built by settlement/writer.py). `record()` returns once the record is committed.

    While one batch commits, the records of other calls queue up and go into the next single
    transaction, so the number of commits grows far slower than the number of calls.
    """

    def __init__(
        self,
        transaction: BatchCommit[S],
        rows: RecordRows,
        queue_size: int = 10_000,
        max_batch: int = MAX_BATCH,
        outage: DatabaseOutage | None = None,
        spool: UsageSpool | None = None,
    ) -> None:
        self._transaction = transaction
        self._rows = rows
        self._book: PriceBook = rows.book
        self._queue: asyncio.Queue[Pending[S] | _CatchUp | None] = asyncio.Queue(maxsize=max(1, queue_size))
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

    async def record(self, outcome: CallOutcome, settlement: S | None = None) -> int | None:
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
        pending = Pending(outcome, record_id, asyncio.get_running_loop().create_future(), settlement)
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
        await self._transaction.close()
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

    async def _write(self, batch: list[Pending[S]]) -> None:
        if self._outage is not None and self._outage.down:
            self._to_spool(batch)  # the database is away: straight to the spool, no doomed retries
            return
        for delay in (*RETRY_DELAYS, None):
            try:
                await self._transaction.commit(batch)
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
                await self._transaction.commit([pending])
            except Exception:
                log.exception("usage record %s could not be stored", pending.record_id)
                pending.done.set_exception(ServiceUnavailable("the usage record could not be stored"))
            else:
                self._finish([pending])

    def _to_spool(self, batch: list[Pending[S]]) -> None:
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
            chunk: list[Pending[S]] = [
                Pending(outcome, record_id, loop.create_future())
                for record_id, outcome in records[start : start + self._max_batch]
            ]
            await self._transaction.commit(chunk)
            for pending in chunk:
                pending.done.cancel()
        if records:
            log.warning("usage spool: %d record(s) written to the database", len(records))

    def _finish(self, batch: list[Pending[S]]) -> None:
        self.batches += 1
        self.records += len(batch)
        for pending in batch:
            if not pending.done.done():
                pending.done.set_result(None)

    def kept_price_of(self, economy_id: uuid.UUID, provider: str, model: str) -> tuple[Prices, int] | None:
        """`price_of` from memory, without an await; None when it must be read."""
        return self._rows.kept_price_of(economy_id, provider, model)

    async def price_of(self, economy_id: uuid.UUID, provider: str, model: str) -> tuple[Prices, int]:
        """The prices and markup a record of this call will be costed with (for a limit's estimate)."""
        return await self._rows.price_of(economy_id, provider, model)
