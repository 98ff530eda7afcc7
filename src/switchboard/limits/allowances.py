"""Per-process allowances (SPEC §13): calls admitted in memory against a share of a limit this
process holds.

A busy process (at least BUSY calls in flight on one set of limits) is granted an allowance in the
background (limits/allowance_rows.py): a hold on each of those limits of some worst cases, already
counted in `reserved`. A call whose worst case fits what the allowance has free is admitted with no
database work before the provider. Its settlement, in its usage record's transaction, draws what it
used from the allowance's rows; in memory, its worst case is free again less what it used. So usage
plus `reserved` never admits more than per-call reservations would.

Grants take a share of what is left (allowance_rows.grant), so near a limit's end they shrink to none
and calls reserve one by one again. What is free goes back when idle, at a calendar window's end, at
shutdown, and when another process asks for it (a reclaim marker: a call was refused there).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import os
import time
import uuid
from collections.abc import Callable, Sequence

from switchboard.db.write_transaction import LedgerConnection, WriteTransactions
from switchboard.kit.clock import utcnow
from switchboard.limits import allowance_rows as rows
from switchboard.limits.allowance import BUSY, IDLE_SECONDS, Allowance
from switchboard.limits.call_records import CallRecords, Flight
from switchboard.limits.ledger import Standing
from switchboard.limits.rules import Limit, window_start

log = logging.getLogger("switchboard.limits")

KEPT = 10_000  # sets of limits followed; past that, calls reserve one by one


class Allowances:
    """This process's allowances, one per set of limits calls were made under."""

    def __init__(
        self,
        transactions: WriteTransactions,
        lease_seconds: float,
        upkeep_seconds: float,
        on_grant: Callable[[], None] | None = None,
    ) -> None:
        self.process = os.urandom(rows.PROCESS_ID_LENGTH // 2).hex()
        self._prefix = rows.prefix_of(self.process)
        self._transactions = transactions
        self._lease_seconds = lease_seconds
        # A refused call waits this long for other processes to give back their free parts: their
        # upkeep sees its reclaim marker within one interval.
        self.patience = 2.5 * upkeep_seconds
        self._upkeep_seconds = upkeep_seconds
        self._numbers = itertools.count()
        self._by_key: dict[tuple[uuid.UUID, ...], Allowance] = {}
        self._last: tuple[tuple[Limit, ...], Allowance] | None = None  # the last `of`
        self._wanted: list[Allowance] = []
        self._wake = asyncio.Event()
        self._records = CallRecords(transactions, lease_seconds, self._prefix)
        self._on_grant = on_grant  # told of every grant that took something (a metric)
        self._renewed_at = -math.inf  # monotonic: when `tick` last renewed this process's rows

    def of(self, limits: tuple[Limit, ...]) -> Allowance | None:
        last = self._last
        if last is not None and last[0] is limits:
            return last[1]  # the registry hands out the same tuple for the same caller (no UUID hashing)
        key = tuple(limit.id for limit in limits)
        allowance = self._by_key.get(key)
        if allowance is None:
            if len(self._by_key) >= KEPT:
                return None
            allowance = self._by_key[key] = Allowance(limits, f"{self._prefix}{next(self._numbers)}")
        elif allowance.limits is not limits:
            allowance.reloaded(limits)
        self._last = (limits, allowance)
        return allowance

    def want(self, allowance: Allowance) -> None:
        """After a call starts: a busy allowance short of room asks the grant task for more."""
        if (
            allowance.in_flight >= BUSY
            and not allowance.granting
            and time.monotonic() >= allowance.grant_after
            and allowance.short()
        ):
            allowance.granting = True
            self._wanted.append(allowance)
            self._wake.set()

    async def record(self, allowance: Allowance, flight: Flight) -> None:
        """Leaves the call's record before the provider is called: should the process die during the
        call, recovery writes its `abandoned` record from it (SPEC §13). The calls starting together
        share one write and one row (limits/call_records.py)."""
        try:
            await self._records.leave(allowance.limits[0].id, flight)
        except BaseException:
            # Cancelled or failed: the call never starts; its record, if written, keeps no row.
            allowance.release(flight)
            self._records.forget(flight)
            raise

    async def follow(self, flight: Flight, record: object) -> None:
        """The call moved on to another attempt: the record recovery would write names that one."""
        await self._records.follow(flight, record)

    def refills(self, allowance: Allowance) -> bool:
        """Whether a call that did not fit should wait for a grant rather than reserve on its own: the
        allowance was given back by the last call of a busy spell (or of a quiet one right after it,
        `Allowance.emptied`), and may be granted again."""
        return (
            allowance.emptied
            and allowance.stored
            and any(allowance.peak)
            and (allowance.refilling is not None or not allowance.granting)
            and time.monotonic() >= allowance.grant_after
        )

    async def refill(self, allowance: Allowance) -> None:
        """One grant for the calls that start a new busy spell (`refills`): a spell of calls costs one
        grant and one give-back (in its last settlement), not a reservation per call until the
        process is busy again. The grant runs as a task of its own: a waiting call that is cancelled
        does not cancel it."""
        task = allowance.refilling
        if task is None:
            allowance.granting = True
            task = allowance.refilling = asyncio.ensure_future(self._refill(allowance))
        await asyncio.shield(task)

    async def _refill(self, allowance: Allowance) -> None:
        try:
            await self._granted(allowance)
        finally:
            allowance.emptied = False
            allowance.refilling = None

    async def grant_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            wanted, self._wanted = self._wanted, []
            for allowance in wanted:
                await self._granted(allowance)

    async def _granted(self, allowance: Allowance) -> None:
        """A grant asked for (`granting` set); a failure only means calls reserve one by one a while."""
        try:
            await self._grant(allowance)
        except Exception:
            log.warning("granting an allowance failed; calls reserve one by one", exc_info=True)
            allowance.grant_after = time.monotonic() + self._upkeep_seconds
        finally:
            allowance.granting = False

    async def _grant(self, allowance: Allowance) -> None:
        free = max(allowance.room(), 0)
        wanted = rows.MAX_CALLS - free
        sizes = tuple(allowance.peak)
        if wanted <= 0 or not any(sizes):
            return
        limits = allowance.limits
        # Its settlements change its rows too: on PostgreSQL, at the same time, in another order, the
        # two statements would deadlock (settlement.transaction._allowances_of).
        async with self._transactions.rows_locked_here([allowance.name]):
            standings, count = await rows.grant(
                self._transactions, limits, sizes, wanted, allowance.name, self._lease_seconds, free
            )
        own = allowance.granted
        allowance.standings = [
            Standing(limit, limit.amount - standing.remaining - mine, 0)
            for limit, standing, mine in zip(limits, standings, own, strict=True)
        ]
        allowance.granted = [mine + count * size for mine, size in zip(own, sizes, strict=True)]
        allowance.stored = allowance.stored or count > 0
        if count and self._on_grant is not None:
            self._on_grant()
        now = utcnow()
        allowance.windows = tuple(window_start(limit.window, now) for limit in limits)
        if count < wanted // 2:  # little left, or a reclaim marker: not again before the next tick
            allowance.grant_after = time.monotonic() + self._upkeep_seconds

    async def tick(self) -> None:
        """The upkeep's part: idle and unwanted allowances go back, and every row of this process
        (allowances and running calls' records) is renewed once a third of the lease has passed
        (each row is written with a whole lease)."""
        live = [a for a in self._by_key.values() if a.stored or a.flights]
        finished = self._records.finished()  # record rows whose calls have all settled
        if not live and not finished:
            self._forget_idle()
            return
        ids = sorted({limit.id for allowance in live for limit in allowance.limits})
        now, moment = utcnow(), time.monotonic()
        names = [allowance.name for allowance in live]
        async with self._transactions.rows_locked_here(names), self._transactions.begin() as conn:
            if moment - self._renewed_at >= self._lease_seconds / 3:
                await rows.renew(conn, ids, self.process, self._lease_seconds)
                self._renewed_at = moment
            asked = await rows.reclaimed(conn, now)
            parts: list[rows.Part] = list(finished)
            for allowance in live:
                limits = allowance.limits
                idle = not allowance.in_flight and moment - allowance.used_at >= IDLE_SECONDS
                if idle:
                    parts.extend(allowance.given_back())
                elif any(limit.id in asked for limit in limits) or allowance.windows != tuple(
                    window_start(limit.window, now) for limit in limits
                ):
                    parts.extend(allowance.free_parts())
            await _give_back(conn, parts)
        self._forget_idle()

    def _forget_idle(self) -> None:
        moment = time.monotonic()
        for key, allowance in list(self._by_key.items()):
            idle = moment - allowance.used_at >= IDLE_SECONDS
            if idle and not (allowance.stored or allowance.flights or allowance.in_flight):
                del self._by_key[key]
                self._last = None

    async def ask_back(self, limits: Sequence[Limit]) -> bool:
        """A call was refused on these limits: this process's free parts there go back at once, and a
        reclaim marker asks other holders for theirs. True when waiting may help (below)."""
        ids = [limit.id for limit in limits]
        returning: list[rows.Part] = []
        # Waiting helps while an allowance here may free more (a grant lands, a call settles), or a
        # call refused beside this one gave its free part back a moment ago.
        mine, now = False, time.monotonic()
        for allowance in self._by_key.values():
            if any(limit.id in ids for limit in allowance.limits):
                parts = allowance.free_parts()
                if parts:
                    allowance.freed_at = now
                    returning.extend(parts)
                recent = now - allowance.freed_at < self.patience
                mine = mine or allowance.granting or bool(allowance.flights) or recent
                allowance.grant_after = now + self.patience
        names = {name for _, name, _ in returning}
        async with self._transactions.rows_locked_here(names), self._transactions.begin() as conn:
            await rows.draw(conn, returning)
            others = await rows.others_hold(conn, ids, self.process)
            if others:
                await rows.ask_back(conn, ids, self.process, self.patience)
        return others or mine

    async def close(self) -> None:
        """At shutdown (its calls have ended): every allowance goes back, and settled calls' record rows."""
        parts = [part for allowance in self._by_key.values() for part in allowance.given_back()]
        parts.extend(self._records.finished())
        if parts:
            names = {name for _, name, _ in parts}
            async with self._transactions.rows_locked_here(names), self._transactions.begin() as conn:
                await _give_back(conn, parts)


async def _give_back(conn: LedgerConnection, parts: Sequence[rows.Part]) -> None:
    """Free parts drawn from their rows; rows given back whole (amount -1, `Allowance.given_back`) dropped."""
    await rows.draw(conn, [part for part in parts if part[2] >= 0])
    await rows.drop(conn, [part for part in parts if part[2] < 0])
