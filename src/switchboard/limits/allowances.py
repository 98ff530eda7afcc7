"""Per-process allowances (SPEC §13): calls admitted in memory against slots this process holds.

A busy process (at least BUSY calls in flight on one set of limits) is granted slots in the
background (limits/slots.py): holds sized to one call's worst case, already counted in `reserved`.
A call whose worst case fits a free slot takes it with no database work before the provider, and is
settled under the slot's name like any hold: the settlement replaces the slot's worst case by the
call's actual usage and ends the slot (a slot serves one call; the background grants more). So
usage plus `reserved` never admits more than per-call reservations would.

Grants take a share of what is left (limits/slots.grant), so near a limit's end they shrink to none
and calls reserve one by one again. Free slots go back when idle, at a calendar window's end, at
shutdown, and when another process asks for them (a reclaim marker: a call was refused there).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.db.write_transaction import WriteTransactions
from switchboard.kit.clock import utcnow
from switchboard.limits import slots
from switchboard.limits.ledger import Standing
from switchboard.limits.rules import Limit, window_start

log = logging.getLogger("switchboard.limits")

BUSY = 4  # calls in flight on one set of limits before this process asks for slots
IDLE_SECONDS = 1.0  # free slots go back once no call has run under their limits for this long
KEPT = 10_000  # sets of limits followed; past that, calls reserve one by one
_LOW = 32  # fewer free slots than this (with BUSY calls in flight): grant more, before they run out


class Slot:
    __slots__ = ("name", "sizes")

    def __init__(self, name: str, sizes: tuple[int, ...]) -> None:
        self.name = name
        self.sizes = sizes  # one call's worst case per limit, in the allowance's order


class Allowance:
    """One set of limits' slots in this process, and the calls in flight under it."""

    def __init__(self, limits: tuple[Limit, ...]) -> None:
        self.limits = limits
        self.free: list[Slot] = []
        # Slot name → what builds the call's record for recovery (most calls end before it is
        # needed), until it is written on the slot's row (then None).
        self.busy: dict[str, Callable[[], object] | None] = {}
        self.in_flight = 0
        self.peak = [0] * len(limits)  # the largest worst case seen per limit: the next slots' size
        self.used_at = time.monotonic()
        self.grant_after = 0.0  # monotonic: no grant before (a grant that found little left waits)
        self.granting = False
        # What was left per limit at the last grant, this process's slots included, and what calls
        # taken on slots since may spend: the figures a slot's call decides its cap and headers on.
        self.left: list[int] = []
        self.spent = [0] * len(limits)
        self.windows: tuple[datetime, ...] = ()

    def standings(self) -> list[Standing] | None:
        if not self.left:
            return None
        return [
            Standing(limit, limit.amount - max(left - spent, 0), 0)
            for limit, left, spent in zip(self.limits, self.left, self.spent, strict=True)
        ]

    def take(self, needs: Sequence[int], call: Callable[[], object]) -> str | None:
        """A free slot covering `needs` (per limit), now the call's; None when none does."""
        free = self.free
        for index in range(len(free) - 1, -1, -1):
            slot = free[index]
            if all(need <= size for need, size in zip(needs, slot.sizes, strict=True)):
                del free[index]
                self.busy[slot.name] = call
                self.spent = [spent + need for spent, need in zip(self.spent, needs, strict=True)]
                return slot.name
        return None

    def started(self, needs: Sequence[int] | None = None) -> None:
        self.in_flight += 1
        self.used_at = time.monotonic()
        if needs is not None:
            self.peak = [max(peak, need) for peak, need in zip(self.peak, needs, strict=True)]

    def ended(self, name: str) -> None:
        self.in_flight -= 1
        self.busy.pop(name, None)

    def follow(self, name: str, call: Callable[[], object]) -> None:
        """The call moved on to another attempt: recovery's record names it (if not written yet)."""
        if self.busy.get(name) is not None:
            self.busy[name] = call

    def held(self) -> list[int]:
        """What this process's slots hold per limit (free and busy)."""
        sizes = [slot.sizes for slot in self.free]
        count = len(self.busy)
        return [sum(size[i] for size in sizes) + count * self.peak[i] for i in range(len(self.limits))]


class Allowances:
    """This process's allowances, one per set of limits calls were made under."""

    def __init__(self, transactions: WriteTransactions, lease_seconds: float, upkeep_seconds: float) -> None:
        self.process = os.urandom(slots.PROCESS_ID_LENGTH // 2).hex()
        self._prefix = slots.prefix_of(self.process)
        self._transactions = transactions
        self._lease_seconds = lease_seconds
        # A refused call waits this long for other processes to return their free slots: their
        # upkeep sees its reclaim marker within one interval.
        self.patience = 2.5 * upkeep_seconds
        self._upkeep_seconds = upkeep_seconds
        self._numbers = itertools.count()
        self._by_key: dict[tuple[uuid.UUID, ...], Allowance] = {}
        self._wanted: list[Allowance] = []
        self._wake = asyncio.Event()

    def of(self, limits: tuple[Limit, ...]) -> Allowance | None:
        key = tuple(limit.id for limit in limits)
        allowance = self._by_key.get(key)
        if allowance is None:
            if len(self._by_key) >= KEPT:
                return None
            allowance = self._by_key[key] = Allowance(limits)
        elif allowance.limits is not limits:
            allowance.limits = limits  # reloaded: the amounts may have changed
        return allowance

    def want(self, allowance: Allowance) -> None:
        """After a call starts: a busy allowance short of free slots asks the grant task for more."""
        if (
            allowance.in_flight >= BUSY
            and len(allowance.free) < _LOW
            and not allowance.granting
            and time.monotonic() >= allowance.grant_after
        ):
            allowance.granting = True
            self._wanted.append(allowance)
            self._wake.set()

    async def grant_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            wanted, self._wanted = self._wanted, []
            for allowance in wanted:
                try:
                    await self._grant(allowance)
                except Exception:
                    log.warning("granting an allowance failed; calls reserve one by one", exc_info=True)
                    allowance.grant_after = time.monotonic() + self._upkeep_seconds
                finally:
                    allowance.granting = False

    async def _grant(self, allowance: Allowance) -> None:
        wanted = slots.MAX_SLOTS - len(allowance.free)
        sizes = tuple(allowance.peak)
        if wanted <= 0 or not any(sizes):
            return
        names = [f"{self._prefix}{next(self._numbers)}" for _ in range(wanted)]
        held = allowance.held()
        limits = allowance.limits
        standings, count = await slots.grant(
            self._transactions, limits, sizes, wanted, names, self._lease_seconds, len(allowance.free)
        )
        allowance.free.extend(Slot(name, sizes) for name in names[:count])
        allowance.left = [standing.remaining + own for standing, own in zip(standings, held, strict=True)]
        allowance.spent = [0] * len(limits)
        now = utcnow()
        allowance.windows = tuple(window_start(limit.window, now) for limit in limits)
        if count < wanted // 2:  # little left, or a reclaim marker: not again before the next tick
            allowance.grant_after = time.monotonic() + self._upkeep_seconds

    async def tick(self, engine: AsyncEngine) -> None:
        """The upkeep's part: idle and unwanted free slots go back, running calls' records are left
        on their slots' rows, and every slot's lease is renewed."""
        if not any(a.free or a.busy for a in self._by_key.values()):
            self._forget_idle()
            return
        now, moment = utcnow(), time.monotonic()
        async with engine.begin() as conn:
            asked = await slots.reclaimed(conn, now)
            returning: list[str] = []
            calls: list[tuple[uuid.UUID, str, object]] = []
            ids: set[uuid.UUID] = set()
            for allowance in self._by_key.values():
                limits = allowance.limits
                idle = not allowance.in_flight and moment - allowance.used_at >= IDLE_SECONDS
                if allowance.free and (
                    idle
                    or any(limit.id in asked for limit in limits)
                    or allowance.windows != tuple(window_start(limit.window, now) for limit in limits)
                ):
                    returning.extend(slot.name for slot in allowance.free)
                    allowance.free.clear()
                for name, call in allowance.busy.items():
                    if call is not None:
                        calls.append((limits[0].id, name, call()))
                        allowance.busy[name] = None
                if allowance.free or allowance.busy:
                    ids.update(limit.id for limit in limits)
            await slots.give_back(conn, returning)
            await slots.remember_calls(conn, calls)
            await slots.renew(conn, sorted(ids), self.process, self._lease_seconds)
        self._forget_idle()

    def _forget_idle(self) -> None:
        moment = time.monotonic()
        for key, allowance in list(self._by_key.items()):
            idle = moment - allowance.used_at >= IDLE_SECONDS
            if idle and not (allowance.free or allowance.busy or allowance.in_flight):
                del self._by_key[key]

    async def ask_back(self, limits: Sequence[Limit]) -> bool:
        """A call was refused on these limits: this process's free slots there go back at once, and
        when other processes hold slots there, a reclaim marker asks them for theirs. True when
        waiting for them may help."""
        ids = [limit.id for limit in limits]
        returning: list[str] = []
        for allowance in self._by_key.values():
            if allowance.free and any(limit.id in ids for limit in allowance.limits):
                returning.extend(slot.name for slot in allowance.free)
                allowance.free.clear()
                allowance.grant_after = time.monotonic() + self.patience
        async with self._transactions.begin() as conn:
            await slots.give_back(conn, returning)
            others = await slots.others_hold(conn, ids, self.process)
            if others:
                await slots.ask_back(conn, ids, self.process, self.patience)
        return others or bool(returning)

    async def close(self) -> None:
        """At shutdown: every free slot goes back (busy ones end with their calls' settlement)."""
        returning = [slot.name for allowance in self._by_key.values() for slot in allowance.free]
        for allowance in self._by_key.values():
            allowance.free.clear()
        if returning:
            async with self._transactions.begin() as conn:
                await slots.give_back(conn, returning)
