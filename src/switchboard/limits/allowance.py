"""One set of limits' allowance in a process (limits/allowances.py has the process's allowances, how
they are granted and given back): what it holds per limit, what its calls in flight hold of it, and
what a call admitted on it, or settling, changes of it in memory."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from switchboard.limits import allowance_rows as rows
from switchboard.limits.call_records import Flight
from switchboard.limits.ledger import Standing
from switchboard.limits.rules import Limit

BUSY = 4  # calls in flight on one set of limits before this process asks for an allowance
IDLE_SECONDS = 1.0  # an allowance goes back once no call has run under its limits for this long
_LOW = rows.MAX_CALLS // 2  # room for fewer calls than this, a busy allowance asks for more


class Allowance:
    """One set of limits' allowance in this process, and the calls in flight under it."""

    def __init__(self, limits: tuple[Limit, ...], name: str) -> None:
        self.limits = limits
        self.name = name  # its rows' name, on each of its limits
        count = len(limits)
        self.granted = [0] * count  # what its rows hold, as this process last changed them
        self.stored = False  # its rows exist (granted to once, not yet dropped)
        self.held = [0] * count  # the worst cases of its calls in flight
        self.flights: dict[str, Flight] = {}
        self._numbers = itertools.count()
        self.in_flight = 0  # calls in flight under these limits, on the allowance or not
        self.unsettled = 0  # of those, the calls whose settlement has not been handed over yet
        self.peak = [0] * count  # the largest worst case seen per limit: what a grant counts in
        self.used_at = time.monotonic()
        self.grant_after = 0.0  # monotonic: no grant before (a grant that found little left waits)
        self.freed_at = -math.inf  # monotonic: when its free part last went back to a refused call
        self.granting = False
        # Given back whole by the last call of a busy spell (`settling`): the next call takes a grant
        # again at once, and the calls arriving meanwhile wait for it (`Allowances.refill`). Also
        # after a quiet spell that a busy one ended less than IDLE_SECONDS before: a busy process is
        # at times down to one call in flight. Not after quiet spells only: one call at a time
        # reserves on its own (one transaction, where a grant, a records row and a give-back would
        # take two and a half).
        self.emptied = False
        self.busy_spell = False  # the spell under way has had BUSY calls in flight
        self.busy_ended = -math.inf  # monotonic: when the last busy spell ended
        self.refilling: asyncio.Task[None] | None = None
        # What each limit had left at the last grant, this allowance included, less the worst cases
        # of the calls admitted on it since: the figures an admitted call decides its cap and headers
        # on (none before the first grant).
        self.standings: list[Standing] = []
        self.windows: tuple[datetime, ...] = ()

    def reloaded(self, limits: tuple[Limit, ...]) -> None:
        """The limits were loaded again (their amounts may have changed): what is left stays."""
        self.limits = limits
        if self.standings:
            self.standings = [
                Standing(limit, limit.amount - standing.remaining, 0)
                for limit, standing in zip(limits, self.standings, strict=True)
            ]

    def room(self) -> int:
        """How many more calls of the largest worst case seen fit what is free."""
        return min(
            (granted - held) // max(peak, 1)
            for granted, held, peak in zip(self.granted, self.held, self.peak, strict=True)
        )

    def short(self) -> bool:
        """`room() < _LOW`, without dividing: asked after every call taken under load."""
        for granted, held, peak in zip(self.granted, self.held, self.peak, strict=True):
            if granted - held < _LOW * (peak if peak > 1 else 1):
                return True
        return False

    def take(self, needs: Sequence[int], call: Callable[[], object]) -> Flight | None:
        """The call on the allowance when `needs` (per limit) fits what is free; else None."""
        held, granted = self.held, self.granted
        for index, need in enumerate(needs):
            if held[index] + need > granted[index]:
                return None
        standings = self.standings
        for index, need in enumerate(needs):
            held[index] += need
            if standings:
                left = standings[index].remaining - need
                standings[index].remaining = left if left > 0 else 0
        flight = Flight(f"{self.name}.{next(self._numbers)}", needs, call)
        self.flights[flight.name] = flight
        return flight

    def started(self, needs: Sequence[int] | None = None) -> None:
        self.in_flight += 1
        self.unsettled += 1
        self.used_at = time.monotonic()
        if self.in_flight >= BUSY:
            self.busy_spell = True
        if needs is not None:
            self.peak = [max(peak, need) for peak, need in zip(self.peak, needs, strict=True)]

    def release(self, flight: Flight) -> None:
        """A call taken on the allowance that never went on: its record could not be left first. (Were
        it the last call, what the allowance holds goes back at the upkeep once idle.)"""
        if self.flights.pop(flight.name, None) is not None:
            self.held = [have - need for have, need in zip(self.held, flight.needs, strict=True)]
            self.in_flight -= 1
            self.unsettled -= 1

    def settling(self) -> list[rows.Part]:
        """A call under these limits hands over its settlement. The last one running gives back all
        the allowance holds, in its own settlement: `reserved` is back to 0 as soon as the last answer
        is produced (SPEC §13), not at the next upkeep. The parts draw whole rows (their own call's
        usage is drawn as well: a row never goes below 0); a grant committed meanwhile keeps what the
        call did not use, as memory does (`ended`)."""
        self.unsettled -= 1
        if self.unsettled:
            return []
        moment = time.monotonic()
        if self.busy_spell:  # the spell ends with its last call
            self.busy_spell, self.busy_ended = False, moment
        if not self.stored or not any(self.granted):
            return []
        parts = [
            (limit.id, self.name, granted)
            for limit, granted in zip(self.limits, self.granted, strict=True)
            if granted
        ]
        self.granted = [0] * len(self.limits)
        self.emptied = moment - self.busy_ended < IDLE_SECONDS
        return parts

    def ended(self, flight: Flight | None, used: Sequence[int] | None) -> None:
        """A call under these limits settled. On the allowance: its worst case is free again, less
        what it used (`used` per limit, as its settlement drew it; None: the settlement's outcome is
        unknown, so its whole worst case counts as drawn)."""
        self.in_flight -= 1
        if flight is None:
            return
        self.flights.pop(flight.name, None)
        if used is not None:  # committed: its record for recovery is no longer needed
            flight.settled()
        drawn = flight.needs if used is None else used
        held, granted = self.held, self.granted
        for index, need in enumerate(flight.needs):
            held[index] -= need
            left = granted[index] - drawn[index]
            granted[index] = left if left > 0 else 0

    def free_parts(self) -> list[rows.Part]:
        """What is free per limit, now given back: the allowance keeps its running calls' worst cases."""
        parts = [
            (limit.id, self.name, granted - held)
            for limit, granted, held in zip(self.limits, self.granted, self.held, strict=True)
            if granted > held
        ]
        self.granted = list(self.held)
        return parts

    def given_back(self) -> list[rows.Part]:
        """All it holds goes back when no call runs on it (its rows deleted); else its free parts."""
        if self.flights:
            return self.free_parts()
        self.granted = [0] * len(self.limits)
        if not self.stored:
            return []
        self.stored = False
        return [(limit.id, self.name, -1) for limit in self.limits]  # -1: the row is dropped
