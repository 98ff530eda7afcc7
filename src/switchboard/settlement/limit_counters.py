"""The limits' side of a settlement (SPEC §13): finished calls' holds end, their usage is counted.

A settlement needs no lock: it deletes its own call's holds and adds to counters in single
statements (a bucket's refill is computed inside its upsert), and a reservation (limits/ledger.py)
reads a limit's counter and holds in one statement, so it sees a settlement whole or not at all.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

from sqlalchemy import BigInteger, Float, Table, bindparam, delete, func, type_coerce
from sqlalchemy import cast as sql_cast

from switchboard.db.driver_statements import driver_ready
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import LedgerConnection
from switchboard.kit.clock import utcnow
from switchboard.limits import allowance_rows
from switchboard.limits.models import LimitHoldRow, LimitUsageRow
from switchboard.limits.rules import Limit, refill_rate, window_start
from switchboard.metering.outcome import CallOutcome

_USAGE = cast(Table, LimitUsageRow.__table__)
_HOLDS = cast(Table, LimitHoldRow.__table__)

_RELEASE = driver_ready(
    delete(_HOLDS).where(
        _HOLDS.c.limit_id == bindparam("b_limit", type_=_HOLDS.c.limit_id.type),
        _HOLDS.c.call_id == bindparam("b_call"),
    )
)


class Actual(NamedTuple):
    """What one finished call counts against one limit, in place of its hold (a tuple: every settled
    call makes one per limit)."""

    limit: Limit
    amount: int
    at: datetime
    call_id: str
    drawn: bool = False  # `call_id` is an allowance (limits/allowances.py): drawn from, not deleted


def counted(metric: str, outcome: CallOutcome, cost: int) -> int:
    """What a finished call counts against a limit of `metric`."""
    if metric == "requests":
        return 1
    if metric == "tokens":
        return outcome.prompt_tokens + outcome.completion_tokens
    return cost


def actuals_of(
    call_id: str, limits: Sequence[Limit], outcome: CallOutcome, cost: int, drawn: bool = False
) -> list[Actual]:
    """One call's actuals, one per limit it held against."""
    at = outcome.occurred_at
    return [Actual(limit, counted(limit.metric, outcome, cost), at, call_id, drawn) for limit in limits]


def _seconds(dialect: str, moment: Any) -> Any:
    """A stored UTC time in seconds, to the microsecond (SQLite's julianday() keeps milliseconds)."""
    if dialect == "postgresql":
        return func.extract("epoch", moment)
    # SQLite keeps 'YYYY-MM-DD HH:MM:SS.ffffff': whole seconds, plus the fraction from character 20.
    return type_coerce(func.strftime("%s", moment), Float) + type_coerce(func.substr(moment, 20), Float)


@functools.cache
def _count_upsert(dialect: str) -> Any:
    """Adds usage to counters, many rows in one statement. A bucket's debt is first brought to the
    new `updated_at` (refilled at `b_rate` per second; 0 for calendar windows, which only add)."""
    values: dict[str, Any] = {
        "limit_id": bindparam("b_limit_id", type_=_USAGE.c.limit_id.type),
        "window_start": bindparam("b_window_start", type_=_USAGE.c.window_start.type),
        "used": bindparam("b_used", type_=_USAGE.c.used.type),
        "updated_at": bindparam("b_updated_at", type_=_USAGE.c.updated_at.type),
        "rate": bindparam("b_rate", type_=_USAGE.c.rate.type),
    }
    upsert = insert_for(dialect)(_USAGE).values(values)
    new, old = upsert.excluded, _USAGE.c
    greatest, least = (func.greatest, func.least) if dialect == "postgresql" else (func.max, func.min)
    elapsed = greatest(_seconds(dialect, new.updated_at) - _seconds(dialect, old.updated_at), 0)
    refill = least(elapsed * new.rate, old.used)
    refilled = sql_cast(func.floor(refill) if dialect == "postgresql" else refill, BigInteger)
    upsert = upsert.on_conflict_do_update(
        index_elements=["limit_id", "window_start"],
        set_={
            "used": greatest(old.used - refilled, 0) + new.used,
            "updated_at": new.updated_at,
            "rate": new.rate,
        },
    )
    return driver_ready(upsert)


@functools.cache
def _settle_upsert() -> Any:
    """PostgreSQL: a hold's delete and its counter's upsert as one statement."""
    released = (
        delete(_HOLDS)
        .where(_HOLDS.c.limit_id == bindparam("b_limit_id"), _HOLDS.c.call_id == bindparam("b_call"))
        .cte("released")
    )
    return _count_upsert("postgresql").add_cte(released)


async def release_holds(conn: LedgerConnection, holds: Sequence[tuple[uuid.UUID, str]]) -> None:
    """Ends settled calls' holds, given as (limit id, call id): one statement, by the table's key."""
    if holds:
        await conn.execute(
            _RELEASE, [{"b_limit": limit_id, "b_call": call_id} for limit_id, call_id in holds]
        )


# A batch's usage per counter, keyed by (the limit id's integer, the window's start): [used, limit id,
# refill rate]. The integer sorts as the id does; a UUID hashes and compares in Python, an int in C.
Totals = dict[tuple[int, datetime], list[Any]]


class DrawnTally:
    """What a batch's calls admitted on allowances used (limits/allowances.py), summed as they come:
    per allowance row (drawn from it) and per counter (added to it), with no `Actual` per call and
    limit. Keyed by the limit id's integer, in the same order as the id: a UUID hashes in Python."""

    __slots__ = ("counters", "rows")

    def __init__(self) -> None:
        self.rows: dict[tuple[int, str], list[Any]] = {}  # -> [used, limit id]
        self.counters: Totals = {}

    def add(self, allowance: str, limits: Sequence[Limit], outcome: CallOutcome, cost: int) -> None:
        at = outcome.occurred_at
        rows, counters = self.rows, self.counters
        for limit in limits:
            amount = counted(limit.metric, outcome, cost)
            if not amount:
                continue
            number = limit.id.int
            found = rows.get((number, allowance))
            if found is None:
                rows[number, allowance] = [amount, limit.id]
            else:
                found[0] += amount
            _add_usage(counters, limit, amount, at)

    def parts(self) -> list[allowance_rows.Part]:
        """What to draw, one change a row, in the rows' order."""
        return [(limit_id, name, used) for (_, name), (used, limit_id) in sorted(self.rows.items())]


async def settle(
    conn: LedgerConnection,
    actuals: Sequence[Actual],
    returned: Sequence[allowance_rows.Part] = (),
    drawn: DrawnTally | None = None,
) -> None:
    """Ends finished calls' holds, adds what they used to their limits' counters, draws what the calls
    admitted on allowances used (`drawn`) from the allowances' rows and adds it to the counters, and
    draws what goes back of allowances (`returned`).

    The one place a batch's limits are settled in its transaction (the records' own statement on
    PostgreSQL aside: settlement/postgres.py)."""
    if drawn is not None and drawn.rows:
        await allowance_rows.draw(conn, drawn.parts())
        await _add_to_counters(conn, drawn.counters)
    if returned:
        await allowance_rows.draw(conn, returned)
    if not actuals:
        return
    if conn.dialect.name != "postgresql":
        await release_holds(conn, [(actual.limit.id, actual.call_id) for actual in actuals])
        await count(conn, actuals)
        return
    # One statement per hold (its delete and its counter's upsert), all in one round trip.
    now = utcnow()
    rows = sorted(
        (
            actual.limit.id,
            window_start(actual.limit.window, actual.at),
            actual.call_id,
            actual.amount,
            refill_rate(actual.limit),
        )
        for actual in actuals
    )
    await conn.execute(
        _settle_upsert(),
        [
            {"b_limit_id": limit_id, "b_window_start": start, "b_call": call_id, "b_used": used,
             "b_updated_at": now, "b_rate": rate}
            for limit_id, start, call_id, used, rate in rows
        ],
    )  # fmt: skip


async def count(conn: LedgerConnection, actuals: Sequence[Actual]) -> None:
    """Adds finished calls' usage to their limits' counters."""
    totals: Totals = {}
    for actual in actuals:
        if actual.amount:
            _add_usage(totals, actual.limit, actual.amount, actual.at)
    await _add_to_counters(conn, totals)


def _add_usage(totals: Totals, limit: Limit, amount: int, at: datetime) -> None:
    key = (limit.id.int, window_start(limit.window, at))
    found = totals.get(key)
    if found is None:
        totals[key] = [amount, limit.id, refill_rate(limit)]
    else:
        found[0] += amount


async def _add_to_counters(conn: LedgerConnection, totals: Totals) -> None:
    if not totals:
        return
    now = utcnow()
    await conn.execute(
        _count_upsert(conn.dialect.name),
        [
            {
                "b_limit_id": limit_id,
                "b_window_start": start,
                "b_used": used,
                "b_updated_at": now,
                "b_rate": rate,
            }
            for (_, start), (used, limit_id, rate) in sorted(totals.items())
        ],
    )
