"""The limits ledger (SPEC §13): holds of running calls, counters per window.

A reservation locks its limits' rows, always in id order (PostgreSQL: SELECT … FOR UPDATE; SQLite: its
transaction holds the database's one write lock), then reads, decides and holds: reservations on any
number of replicas serialise per limit and never deadlock one another. A settlement needs no lock:
it deletes its own call's holds and adds to counters in single statements (a bucket's refill is
computed inside its upsert), and a reservation reads a limit's counter and holds in one statement,
so it sees a settlement whole or not at all.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    BigInteger,
    Float,
    Table,
    bindparam,
    delete,
    func,
    select,
    type_coerce,
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
from switchboard.limits.rules import ROLLING_SECONDS, Limit, bucket_debt, refill_rate, resets_at, window_start
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.rollup_summary import counted_in_rollups

_LIMITS = cast(Table, LimitRow.__table__)
_USAGE = cast(Table, LimitUsageRow.__table__)
_HOLDS = cast(Table, LimitHoldRow.__table__)
_RECORDS = cast(Table, UsageRecordRow.__table__)

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
_RELEASE = driver_ready(
    delete(_HOLDS).where(
        _HOLDS.c.limit_id == bindparam("b_limit", type_=_HOLDS.c.limit_id.type),
        _HOLDS.c.call_id == bindparam("b_call"),
    )
)
_RELEASE_DEAD = driver_ready(
    delete(_HOLDS).where(_HOLDS.c.call_id == bindparam("b_call"), _HOLDS.c.lease_until <= bindparam("b_now"))
)


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


class Actual(NamedTuple):
    """What one finished call counts against one limit, in place of its hold (a tuple: every settled
    call makes one per limit)."""

    limit: Limit
    amount: int
    at: datetime
    call_id: str


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


def _subject_filter(limit: Limit) -> list[Any]:
    column = {
        "economy": _RECORDS.c.economy_id,
        "user": _RECORDS.c.user_id,
        "room": _RECORDS.c.room_id,
        "api_key": _RECORDS.c.api_key_id,
        "agent": _RECORDS.c.agent_id,
    }[limit.subject_type]
    subject: object = limit.subject_id if limit.subject_type == "agent" else uuid.UUID(limit.subject_id)
    conditions = [column == subject]
    if limit.economy_id is not None:
        conditions.append(_RECORDS.c.economy_id == limit.economy_id)
    return conditions


async def _sum_records(conn: LedgerConnection, limit: Limit, start: datetime | None) -> int:
    """What the subject's records already count in the window: a new limit starts from the truth."""
    subject: object = limit.subject_id if limit.subject_type == "agent" else uuid.UUID(limit.subject_id)
    # The hourly rollups say the same in far fewer rows, and still know what retention deleted.
    counted = await counted_in_rollups(
        conn, limit.subject_type, subject, limit.economy_id, limit.metric, start
    )
    if counted is not None:
        return counted
    measure: Any = {
        "cost": func.coalesce(func.sum(_RECORDS.c.cost), 0),
        "tokens": func.coalesce(func.sum(_RECORDS.c.prompt_tokens + _RECORDS.c.completion_tokens), 0),
        "requests": func.count(),
    }[limit.metric]
    query = select(measure).where(*_subject_filter(limit))
    if start is not None:
        query = query.where(_RECORDS.c.occurred_at >= start)
    return int(await conn.scalar(query) or 0)


@functools.cache
def _parameter_names(count: int) -> tuple[tuple[str, str], ...]:
    return tuple((f"id{index}", f"ws{index}") for index in range(count))


async def _standing(
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
            counted = await _sum_records(conn, limit, None if limit.window == "total" else start)
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
        needs = plan(await _standing(conn, limits, now, create_missing=True))
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


async def release_holds(conn: LedgerConnection, holds: Sequence[tuple[uuid.UUID, str]]) -> None:
    """Ends settled calls' holds, given as (limit id, call id): one statement, by the table's key."""
    if holds:
        await conn.execute(
            _RELEASE, [{"b_limit": limit_id, "b_call": call_id} for limit_id, call_id in holds]
        )


async def remember_call(conn: AsyncConnection, call_id: str, call: object) -> None:
    """Replaces a running call's record for recovery (a later attempt of the call is under way)."""
    await conn.execute(update(_HOLDS).where(_HOLDS.c.call_id == call_id).values(call=call))


async def release_dead_holds(conn: LedgerConnection, call_id: str, now: datetime) -> bool:
    """Frees a dead call's holds; False when they were settled or renewed meanwhile."""
    result = await conn.execute(_RELEASE_DEAD, {"b_call": call_id, "b_now": now})
    return bool(result.rowcount)


async def dead_calls(
    conn: AsyncConnection, now: datetime, batch: int = 100
) -> list[tuple[str, dict[str, Any] | None]]:
    """Calls whose holds' lease ran out: their replica died (or lost the database for a lease)."""
    rows = await conn.execute(
        # A call's holds together: only one of them carries its record.
        select(_HOLDS.c.call_id, _HOLDS.c.call)
        .where(_HOLDS.c.lease_until <= now)
        .order_by(_HOLDS.c.call_id)
        .limit(batch)
    )
    found: dict[str, dict[str, Any] | None] = {}
    for call_id, call in rows:
        if found.get(call_id) is None:
            found[call_id] = call
    return list(found.items())


async def settle(conn: LedgerConnection, actuals: Sequence[Actual]) -> None:
    """Ends finished calls' holds and adds what they used to their limits' counters."""
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
    totals: dict[tuple[uuid.UUID, datetime], list[Any]] = {}
    for actual in actuals:
        limit = actual.limit
        if not actual.amount:
            continue
        key = (limit.id, window_start(limit.window, actual.at))
        found = totals.get(key)
        if found is None:
            totals[key] = [actual.amount, refill_rate(limit)]
        else:
            found[0] += actual.amount
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
            for (limit_id, start), (used, rate) in sorted(totals.items())
        ],
    )


def _refill_at(limit: Limit, debt: int, now: datetime) -> datetime:
    return now + timedelta(seconds=debt * ROLLING_SECONDS[limit.window] / max(limit.amount, 1))


async def status_of(source: AsyncEngine | AsyncConnection, limit: Limit) -> Status:
    """`{used, reserved, remaining, resets_at}` as GET /limits/{id}/status shows it.

    A request passes its session's connection: a request holding one connection of the process's
    budget while it waits for a second could wait forever once every connection is held that way
    (db/budgeted_pool.py; with PgBouncer, its server connections)."""
    now = utcnow()
    if isinstance(source, AsyncConnection):
        [standing] = await _standing(source, [limit], now, create_missing=False)
    else:
        async with source.connect() as conn:
            [standing] = await _standing(conn, [limit], now, create_missing=False)
    used, reserved = standing.used, standing.reserved
    remaining = max(limit.amount - used - reserved, 0)
    reset = _refill_at(limit, used, now) if limit.rolling else resets_at(limit.window, now)
    return Status(used=used, reserved=reserved, remaining=remaining, resets_at=reset)


def reset_seconds(limit: Limit, used_after: int, now: datetime) -> float:
    """Until the limit is whole again: a bucket's refill of `used_after`; a calendar window's reset."""
    if limit.rolling:  # to the microsecond, as the bucket's refill time is
        return round(used_after * ROLLING_SECONDS[limit.window] / max(limit.amount, 1), 6)
    reset = resets_at(limit.window, now)
    return (reset - now).total_seconds() if reset is not None else 0.0
