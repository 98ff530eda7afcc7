"""Running calls' records for recovery, left before the provider is called (SPEC §13).

A call admitted on an allowance (limits/allowances.py) has no hold of its own to carry its record: it
leaves it on a row of its own (limits/allowance_rows.py) before it goes on, so that a process killed
during the call still gets its `abandoned` record. The calls starting together share one write.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence

from switchboard.db.write_transaction import WriteTransactions
from switchboard.limits import allowance_rows as rows


class Flight:
    """A call admitted on an allowance, until its settlement."""

    __slots__ = ("call", "name", "needs", "recorded")

    def __init__(self, name: str, needs: Sequence[int], call: Callable[[], object]) -> None:
        self.name = name  # its record's row, when it has one
        self.needs = needs  # its worst case per limit, in the allowance's order
        self.call = call  # builds its record for recovery
        self.recorded = False  # its record is on its row (`Allowances.record`)


class CallRecords:
    """Writes the records of the calls waiting for theirs, in one write per batch (group commit)."""

    def __init__(self, transactions: WriteTransactions, lease_seconds: float) -> None:
        self._transactions = transactions
        self._lease_seconds = lease_seconds
        # Calls waiting for their records to be left (`leave`), and the task leaving them.
        self._waiting: list[tuple[uuid.UUID, Flight, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def leave(self, limit_id: uuid.UUID, flight: Flight) -> None:
        """Returns once the call's record is on its row (on `limit_id`); raises when the write failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((limit_id, flight, future))
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._write_waiting())
        await future

    async def _write_waiting(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                calls = [(limit_id, flight.name, flight.call()) for limit_id, flight, _ in batch]
                try:
                    await rows.record_calls_now(self._transactions, calls, self._lease_seconds)
                except Exception as error:
                    for _, _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                    continue
                for _, flight, future in batch:
                    flight.recorded = True
                    if not future.done():
                        future.set_result(None)
        finally:
            self._writer = None
            for _, _, future in self._waiting:  # only when this task was cancelled (shutdown)
                future.cancel()
            self._waiting = []
