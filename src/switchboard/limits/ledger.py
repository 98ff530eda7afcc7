"""The limits ledger (SPEC §13): holds of running calls, counters per window, all under one lock order.

Every transaction that reads or changes what a limit has left first locks the limits' rows, always
in id order (PostgreSQL: SELECT … FOR UPDATE; SQLite: a no-op UPDATE takes the database's one write
lock first), so reservations and settlements on any number of replicas serialise per limit and
never deadlock one another.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.elements import BindParameter

from switchboard.db.driver_statements import driver_ready
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import InlineConnection, LedgerConnection, WriteTransactions
from switchboard.kit.clock import utcnow
from switchboard.limits.models import LimitHoldRow, LimitRow, LimitUsageRow
from switchboard.limits.rules import EPOCH, ROLLING_SECONDS, Limit, bucket_debt, resets_at, window_start
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
def _counters(count: int) -> Any:
    return driver_ready(select(_USAGE).where(_USAGE.c.limit_id.in_(_ids(count))))


@functools.cache
def _held(count: int) -> Any:
    return driver_ready(
        select(_HOLDS.c.limit_id, func.sum(_HOLDS.c.amount))
        .where(_HOLDS.c.limit_id.in_(_ids(count)), _HOLDS.c.lease_until > bindparam("b_now"))
        .group_by(_HOLDS.c.limit_id)
    )


_ADD_HOLDS = driver_ready(_HOLDS.insert())
_RELEASE = driver_ready(delete(_HOLDS).where(_HOLDS.c.call_id == bindparam("b_call")))
_RELEASE_DEAD = driver_ready(
    delete(_HOLDS).where(_HOLDS.c.call_id == bindparam("b_call"), _HOLDS.c.lease_until <= bindparam("b_now"))
)


@functools.cache
def _counter_upserts(dialect: str) -> tuple[Any, Any]:
    """(add to a calendar counter, set a bucket's debt), as one statement each for many rows."""
    values: dict[str, Any] = {
        "limit_id": bindparam("b_limit_id", type_=_USAGE.c.limit_id.type),
        "window_start": bindparam("b_window_start", type_=_USAGE.c.window_start.type),
        "used": bindparam("b_used", type_=_USAGE.c.used.type),
        "updated_at": bindparam("b_updated_at", type_=_USAGE.c.updated_at.type),
    }
    add = insert_for(dialect)(_USAGE).values(values)
    add = add.on_conflict_do_update(
        index_elements=["limit_id", "window_start"],
        set_={"used": _USAGE.c.used + add.excluded.used, "updated_at": add.excluded.updated_at},
    )
    put = insert_for(dialect)(_USAGE).values(values)
    put = put.on_conflict_do_update(
        index_elements=["limit_id", "window_start"],
        set_={"used": put.excluded.used, "updated_at": put.excluded.updated_at},
    )
    return driver_ready(add), driver_ready(put)


@dataclass(frozen=True)
class Standing:
    """What a limit had left when a call asked, before the call's own hold."""

    limit: Limit
    used: int
    reserved: int

    @property
    def remaining(self) -> int:
        return max(self.limit.amount - self.used - self.reserved, 0)


@dataclass(frozen=True)
class Status:
    used: int
    reserved: int
    remaining: int
    resets_at: datetime | None


@dataclass(frozen=True)
class Actual:
    """What one finished call counts against one limit."""

    limit: Limit
    amount: int
    at: datetime


async def lock_limits(conn: LedgerConnection, ids: Iterable[uuid.UUID]) -> None:
    ordered = sorted(set(ids))
    if not ordered or isinstance(conn, InlineConnection):
        return  # an inline transaction began IMMEDIATE: it holds SQLite's write lock already
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


async def _used(
    conn: LedgerConnection, limits: Sequence[Limit], now: datetime, *, create_missing: bool
) -> dict[uuid.UUID, int]:
    rows = {
        (row.limit_id, row.window_start): row
        for row in await conn.execute(_counters(len(limits)), _by_id([limit.id for limit in limits]))
    }
    used: dict[uuid.UUID, int] = {}
    for limit in limits:
        start = window_start(limit.window, now)
        row = rows.get((limit.id, start))
        if limit.rolling:
            used[limit.id] = (
                bucket_debt(limit.window, limit.amount, row.used, row.updated_at, now) if row else 0
            )
            continue
        if row is not None:
            used[limit.id] = int(row.used)
            continue
        counted = await _sum_records(conn, limit, None if limit.window == "total" else start)
        used[limit.id] = counted
        if create_missing:
            await conn.execute(
                insert_for(conn.dialect.name)(_USAGE)
                .values(limit_id=limit.id, window_start=start, used=counted, updated_at=now)
                .on_conflict_do_nothing()
            )
    return used


async def _reserved(conn: LedgerConnection, ids: Sequence[uuid.UUID], now: datetime) -> dict[uuid.UUID, int]:
    rows: list[Any] = list(await conn.execute(_held(len(ids)), {**_by_id(ids), "b_now": now}))
    return {row[0]: int(row[1] or 0) for row in rows}


Planner = Callable[[list[Standing]], dict[uuid.UUID, int]]


async def reserve(
    transactions: WriteTransactions,
    limits: Sequence[Limit],
    plan: Planner,
    *,
    call_id: str,
    call: dict[str, Any] | None,
    lease_seconds: float,
) -> dict[uuid.UUID, int]:
    """Hold what `plan` asks of each limit, given what each has left; `plan` raises to refuse.

    One transaction under the limits' locks: no other call can take the same remaining amount.
    """
    ids = [limit.id for limit in limits]
    async with transactions.rows_locked_here(ids), transactions.begin() as conn:
        now = utcnow()
        await lock_limits(conn, ids)
        used = await _used(conn, limits, now, create_missing=True)
        reserved = await _reserved(conn, [limit.id for limit in limits], now)
        needs = plan([Standing(limit, used[limit.id], reserved.get(limit.id, 0)) for limit in limits])
        lease_until = now + timedelta(seconds=lease_seconds)
        await conn.execute(
            _ADD_HOLDS,
            [
                {
                    "id": uuid.uuid4(),
                    "call_id": call_id,
                    "limit_id": limit_id,
                    "amount": amount,
                    "lease_until": lease_until,
                    "call": call if index == 0 else None,  # recovery needs it once per call
                }
                for index, (limit_id, amount) in enumerate(needs.items())
            ],
        )
    return needs


async def release_holds(conn: LedgerConnection, call_id: str) -> None:
    await conn.execute(_RELEASE, {"b_call": call_id})


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


async def count(conn: LedgerConnection, actuals: Sequence[Actual]) -> None:
    """Adds finished calls' usage to their limits' counters; the caller holds the limits' locks."""
    if not actuals:
        return
    add, put = _counter_upserts(conn.dialect.name)
    now = utcnow()
    rolling = [actual for actual in actuals if actual.limit.rolling]
    if rolling:
        # A bucket's debt is brought to now before the usage is added: the refill it had is kept.
        ids = list({actual.limit.id for actual in rolling})
        rows = {
            row.limit_id: row
            for row in await conn.execute(_counters(len(ids)), _by_id(ids))
            if row.window_start == EPOCH
        }
        debts: dict[uuid.UUID, int] = {}
        for actual in rolling:
            limit = actual.limit
            if limit.id not in debts:
                row = rows.get(limit.id)
                debts[limit.id] = (
                    bucket_debt(limit.window, limit.amount, row.used, row.updated_at, now) if row else 0
                )
            debts[limit.id] += actual.amount
        await conn.execute(
            put,
            [
                {"b_limit_id": limit_id, "b_window_start": EPOCH, "b_used": debt, "b_updated_at": now}
                for limit_id, debt in sorted(debts.items())
            ],
        )
    totals: dict[tuple[uuid.UUID, datetime], int] = {}
    for actual in actuals:
        if not actual.limit.rolling and actual.amount:
            key = (actual.limit.id, window_start(actual.limit.window, actual.at))
            totals[key] = totals.get(key, 0) + actual.amount
    if totals:
        await conn.execute(
            add,
            [
                {"b_limit_id": limit_id, "b_window_start": start, "b_used": amount, "b_updated_at": now}
                for (limit_id, start), amount in sorted(totals.items())
            ],
        )


def _refill_at(limit: Limit, debt: int, now: datetime) -> datetime:
    return now + timedelta(seconds=debt * ROLLING_SECONDS[limit.window] / max(limit.amount, 1))


async def status_of(engine: AsyncEngine, limit: Limit) -> Status:
    """`{used, reserved, remaining, resets_at}` as GET /limits/{id}/status shows it."""
    now = utcnow()
    async with engine.connect() as conn:
        used = (await _used(conn, [limit], now, create_missing=False))[limit.id]
        reserved = (await _reserved(conn, [limit.id], now)).get(limit.id, 0)
    remaining = max(limit.amount - used - reserved, 0)
    reset = _refill_at(limit, used, now) if limit.rolling else resets_at(limit.window, now)
    return Status(used=used, reserved=reserved, remaining=remaining, resets_at=reset)


def reset_seconds(limit: Limit, used_after: int, now: datetime) -> float:
    """Until the limit is whole again: a bucket's refill of `used_after`; a calendar window's reset."""
    if limit.rolling:
        return (_refill_at(limit, used_after, now) - now).total_seconds()
    reset = resets_at(limit.window, now)
    return (reset - now).total_seconds() if reset is not None else 0.0
