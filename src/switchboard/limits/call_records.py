"""Running calls' records for recovery, left before the provider is called (SPEC §13).

A call admitted on an allowance (limits/allowances.py) has no hold of its own to carry its record.
The calls starting together leave theirs in one write: one row per limit (`slot-<process>-r<n>`,
amount 0) whose `call` lists their records, each naming the usage record id its call's settlement
will write. Should the process die, recovery writes each listed call's `abandoned` record under that
id unless it is already stored (settlement/recovery.py): a call that settled is not recorded twice,
and no settlement has to delete anything. Once every call of a row has settled (committed), the row
is deleted with the next records written, or at the next upkeep.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Callable, Sequence

from switchboard.db.write_transaction import WriteTransactions
from switchboard.limits import allowance_rows as rows


class Batch:
    """The row the records of calls that started together are on, until all of them have settled."""

    __slots__ = ("done", "limit_id", "name", "open", "records")

    def __init__(self, limit_id: uuid.UUID, name: str, records: list[object], done: list[rows.Part]) -> None:
        self.limit_id = limit_id
        self.name = name
        self.records = records  # as written, in the order of its calls (`Flight.index`)
        self.open = len(records)  # calls that have not settled yet
        self.done = done  # where its row goes once they all have: deleted with the next records written

    def settled(self) -> None:
        self.open -= 1
        if self.open == 0:
            self.done.append((self.limit_id, self.name, -1))


class Flight:
    """A call admitted on an allowance, until its settlement."""

    __slots__ = ("batch", "call", "index", "name", "needs", "released")

    def __init__(self, name: str, needs: Sequence[int], call: Callable[[], object]) -> None:
        self.name = name  # among its allowance's calls
        self.needs = needs  # its worst case per limit, in the allowance's order
        self.call = call  # builds its record for recovery
        self.batch: Batch | None = None  # the row its record is on, once written (`CallRecords.leave`)
        self.index = 0  # its record's place in the batch's list
        self.released = False  # it never went on (`CallRecords.forget`)

    def settled(self) -> None:
        """Its settlement committed: its batch's row no longer needs its record."""
        if self.batch is not None:
            self.batch.settled()


class CallRecords:
    """Writes the records of the calls waiting for theirs, in one write per batch (group commit)."""

    def __init__(self, transactions: WriteTransactions, lease_seconds: float, prefix: str) -> None:
        self._transactions = transactions
        self._lease_seconds = lease_seconds
        self._prefix = prefix  # the process's rows' (`slot-<process>-`): renewed with its allowances
        self._numbers = itertools.count()
        # Calls waiting for their records to be left (`leave`), and the task leaving them.
        self._waiting: list[tuple[uuid.UUID, Flight, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None
        self.done: list[rows.Part] = []  # rows whose calls have all settled (or never went on)

    async def leave(self, limit_id: uuid.UUID, flight: Flight) -> None:
        """Returns once the call's record is on a row (on `limit_id`); raises when the write failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((limit_id, flight, future))
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._write_waiting())
        await future

    def finished(self) -> list[rows.Part]:
        """The rows whose calls have all settled since last asked, to delete (emptied in place: every
        batch appends to this one list)."""
        done = list(self.done)
        self.done.clear()
        return done

    @staticmethod
    def forget(flight: Flight) -> None:
        """The call never went on (cancelled or failed while its record was written): its record, if
        written, no longer keeps its row."""
        flight.released = True
        flight.settled()

    async def follow(self, flight: Flight, record: object) -> None:
        """The call moved on to another attempt: its row says so, for recovery. The row is written
        again whole, from memory, in turn with its other calls' changes."""
        batch = flight.batch
        if batch is None:
            return
        batch.records[flight.index] = record
        async with self._transactions.rows_locked_here([batch.name]), self._transactions.begin() as conn:
            await rows.rewrite_records(conn, batch.limit_id, batch.name, batch.records)

    async def _write_waiting(self) -> None:
        try:
            while self._waiting:
                waiting, self._waiting = self._waiting, []
                by_limit: dict[uuid.UUID, list[tuple[Flight, asyncio.Future[None]]]] = {}
                for limit_id, flight, future in waiting:
                    by_limit.setdefault(limit_id, []).append((flight, future))
                batches = [
                    (
                        Batch(
                            limit_id,
                            f"{self._prefix}r{next(self._numbers)}",
                            [f.call() for f, _ in calls],
                            self.done,
                        ),
                        calls,
                    )
                    for limit_id, calls in by_limit.items()
                ]
                gone = self.finished()  # deleted in the same write
                try:
                    await rows.record_calls_now(
                        self._transactions,
                        [(batch.limit_id, batch.name, batch.records) for batch, _ in batches],
                        self._lease_seconds,
                        gone,
                    )
                except BaseException as error:
                    self.done.extend(gone)  # for the upkeep (deleting a row twice changes nothing)
                    if not isinstance(error, Exception):
                        raise  # cancelled (shutdown): `close` deletes them
                    for _, future in (call for _, calls in batches for call in calls):
                        if not future.done():
                            future.set_exception(error)
                    continue
                for batch, calls in batches:
                    for index, (flight, future) in enumerate(calls):
                        flight.batch, flight.index = batch, index
                        if flight.released:  # cancelled while the write was under way
                            batch.settled()
                        elif not future.done():
                            future.set_result(None)
        finally:
            self._writer = None
            for _, _, future in self._waiting:  # only when this task was cancelled (shutdown)
                future.cancel()
            self._waiting = []
