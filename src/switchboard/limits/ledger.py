"""The limits ledger's admission side (SPEC §13): a call's holds, a limit's standing and status.

A reservation locks its limits' rows, always in id order (PostgreSQL: SELECT … FOR UPDATE; SQLite: its
transaction holds the database's one write lock), then reads, decides and holds: reservations on any
number of replicas serialise per limit and never deadlock one another. A settlement needs no lock
(settlement/limit_counters.py), and a reservation reads a limit's counter and holds in one
statement, so it sees a settlement whole or not at all.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Table,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.elements import BindParameter

from switchboard.db.driver_statements import driver_ready
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import InlineConnection, LedgerConnection, WriteTransactions
from switchboard.kit.clock import utcnow
from switchboard.limits.models import LimitHoldRow, LimitRow, LimitUsageRow
from switchboard.limits.rules import ROLLING_SECONDS, Limit, bucket_debt, resets_at, window_start
from switchboard.metering.service import counted_since

_LIMITS = cast(Table, LimitRow.__table__)
_USAGE = cast(Table, LimitUsageRow.__table__)
_HOLDS = cast(Table, LimitHoldRow.__table__)

# Built once: constructing a statement (and its cache key) costs more than running it on SQLite.
# Statements over a few limits are built per number of limits, with one parameter each: an
# expanding IN would be rendered again at every execution.


def _ids(count: int) -> list[BindParameter[Any]]:
    return [bindparam(f"id{index}", type_=_LIMITS.c.id.type) for index in range(count)]


def _by_id(ids: Sequence[uuid.UUID]) -> dict[str, Any]:
    return {f"id{index}": value for index, value in enumerate(ids)}


@functools.cache
def _lock_for_update(count: int) -> Any:
    return select(_LIMITS.c.id).where(_LIMITS.c.id.in_(_ids(count))).order_by(_LIMITS.c.id).with_for_update()


@functools.cache
def _lock_by_writing(count: int) -> Any:
    return update(_LIMITS).where(_LIMITS.c.id.in_(_ids(count))).values(id=_LIMITS.c.id)


@functools.cache
def _standings(rolling: tuple[bool, ...]) -> Any:
    """One row: for each limit, its counter in the current window, when that was last settled (a
    bucket's refill counts from there; read only for rolling windows) and what live holds keep.
    Every value is found by its table's key; a limit with no counter yet reads NULL."""
    columns: list[Any] = []
    for index, is_rolling in enumerate(rolling):
        limit_id = bindparam(f"id{index}", type_=_LIMITS.c.id.type)
        counter = (
            _USAGE.c.limit_id == limit_id,
            _USAGE.c.window_start == bindparam(f"ws{index}", type_=_USAGE.c.window_start.type),
        )
        columns.append(select(_USAGE.c.used).where(*counter).scalar_subquery().label(f"used{index}"))
        if is_rolling:
            columns.append(select(_USAGE.c.updated_at).where(*counter).scalar_subquery().label(f"at{index}"))
        held = select(sql_cast(func.sum(_HOLDS.c.amount), BigInteger)).where(  # PostgreSQL's sum is numeric
            _HOLDS.c.limit_id == limit_id, _HOLDS.c.lease_until > bindparam("b_now")
        )
        columns.append(held.scalar_subquery().label(f"held{index}"))
    return driver_ready(select(*columns))


_ADD_HOLDS = driver_ready(_HOLDS.insert())


class Standing:
    """What a limit had left when a call asked, before the call's own hold."""

    __slots__ = ("limit", "remaining", "reserved", "used")

    def __init__(self, limit: Limit, used: int, reserved: int) -> None:
        self.limit = limit
        self.used = used
        self.reserved = reserved
        self.remaining = max(limit.amount - used - reserved, 0)


@dataclass(frozen=True)
class Status:
    used: int
    reserved: int
    remaining: int
    resets_at: datetime | None


async def lock_limits(conn: LedgerConnection, ids: Iterable[uuid.UUID]) -> None:
    if isinstance(conn, InlineConnection):
        return  # an inline transaction began IMMEDIATE: it holds SQLite's write lock already
    ordered = sorted(set(ids))
    if not ordered:
        return
    if conn.dialect.name == "postgresql":
        await conn.execute(_lock_for_update(len(ordered)), _by_id(ordered))
    else:
        # A write first: SQLite's write lock is taken now, before anything is read.
        await conn.execute(_lock_by_writing(len(ordered)), _by_id(ordered))


@functools.cache
def _parameter_names(count: int) -> tuple[tuple[str, str], ...]:
    return tuple((f"id{index}", f"ws{index}") for index in range(count))


async def standings_at(
    conn: LedgerConnection, limits: Sequence[Limit], now: datetime, *, create_missing: bool
) -> list[Standing]:
    """What each limit has used and holds at `now`, in the order of `limits`."""
    parameters: dict[str, Any] = {"b_now": now}
    rolling = []
    for (id_name, start_name), limit in zip(_parameter_names(len(limits)), limits, strict=True):
        parameters[id_name] = limit.id
        parameters[start_name] = window_start(limit.window, now)
        rolling.append(limit.window in ROLLING_SECONDS)
    result = await conn.execute(_standings(tuple(rolling)), parameters)
    row = iter(next(iter(result)))
    standings: list[Standing] = []
    for index, limit in enumerate(limits):
        counted = next(row)
        if rolling[index]:
            since = next(row)
            counted = (
                bucket_debt(limit.window, limit.amount, counted, since, now) if counted is not None else 0
            )
        elif counted is None:
            start = parameters[f"ws{index}"]
            # What the subject's records already count in the window: a new limit starts from the truth.
            since = None if limit.window == "total" else start
            counted = await counted_since(
                conn, limit.subject_type, limit.subject_id, limit.economy_id, limit.metric, since
            )
            if create_missing:
                await conn.execute(
                    insert_for(conn.dialect.name)(_USAGE)
                    .values(limit_id=limit.id, window_start=start, used=counted, updated_at=now)
                    .on_conflict_do_nothing()
                )
        standings.append(Standing(limit, int(counted), int(next(row) or 0)))
    return standings


Planner = Callable[[list[Standing]], dict[uuid.UUID, int]]


async def reserve(
    transactions: WriteTransactions,
    limits: Sequence[Limit],
    plan: Planner,
    *,
    call_id: str,
    call: object | None,  # kept as JSON, for recovery
    lease_seconds: float,
) -> dict[uuid.UUID, int]:
    """Hold what `plan` asks of each limit, given what each has left; `plan` raises to refuse.

    One transaction under the limits' locks: no other call can take the same remaining amount.
    """
    ids = [limit.id for limit in limits]
    async with transactions.rows_locked_here(ids), transactions.begin() as conn:
        now = utcnow()
        await lock_limits(conn, ids)
        needs = plan(await standings_at(conn, limits, now, create_missing=True))
        lease_until = now + timedelta(seconds=lease_seconds)
        holds: list[dict[str, object]] = [
            {
                "call_id": call_id,
                "limit_id": limit_id,
                "amount": amount,
                "lease_until": lease_until,
                "call": None,
            }
            for limit_id, amount in needs.items()
        ]
        holds[0]["call"] = call  # recovery needs it once per call
        await conn.execute(_ADD_HOLDS, holds)
    return needs


def _refill_at(limit: Limit, debt: int, now: datetime) -> datetime:
    return now + timedelta(seconds=debt * ROLLING_SECONDS[limit.window] / max(limit.amount, 1))


async def status_of(source: AsyncEngine | AsyncConnection, limit: Limit) -> Status:
    """`{used, reserved, remaining, resets_at}` as GET /limits/{id}/status shows it.

    A request passes its session's connection: a request holding one connection of the process's
    budget while it waits for a second could wait forever once every connection is held that way
    (db/budgeted_pool.py; with PgBouncer, its server connections)."""
    now = utcnow()
    if isinstance(source, AsyncConnection):
        [standing] = await standings_at(source, [limit], now, create_missing=False)
    else:
        async with source.connect() as conn:
            [standing] = await standings_at(conn, [limit], now, create_missing=False)
    used, reserved = standing.used, standing.reserved
    remaining = max(limit.amount - used - reserved, 0)
    reset = _refill_at(limit, used, now) if limit.rolling else resets_at(limit.window, now)
    return Status(used=used, reserved=reserved, remaining=remaining, resets_at=reset)


def refill_seconds(limit: Limit, used_after: int) -> float:
    """Until a rolling window's bucket has refilled `used_after`, to the microsecond (as the bucket's
    refill time is): no clock needed."""
    return round(used_after * ROLLING_SECONDS[limit.window] / max(limit.amount, 1), 6)


def reset_seconds(limit: Limit, used_after: int, now: datetime) -> float:
    """Until the limit is whole again: a bucket's refill of `used_after`; a calendar window's reset."""
    if limit.rolling:
        return refill_seconds(limit, used_after)
    reset = resets_at(limit.window, now)
    return (reset - now).total_seconds() if reset is not None else 0.0
