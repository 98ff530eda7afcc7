"""Rollups (every tier) recomputed from the records, compared with the stored ones, rebuilt where they differ.

Works a day at a time and reads each hour's records once (their 5-minute sums make the hour's and the
day's), so memory stays bounded by one day's keys however long the history.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    case,
    delete,
    func,
    insert,
    literal,
    literal_column,
    select,
    text,
    type_coerce,
)
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.db.types import UTCDateTime
from switchboard.metering.models import EconomyRow
from switchboard.metering.models import UsageRecordRow as R
from switchboard.metering.models import UsageRollupRow as U
from switchboard.metering.rollups import (
    DAILY,
    FIVE_MINUTES,
    KEY,
    MEASURES,
    NO_AGENT,
    NO_API_KEY,
    NO_ROOM,
    ROLLUPS,
    SUMS,
    day_of,
    hour_of,
    period_start,
)

_HOUR = timedelta(hours=1)
_DAY = timedelta(days=1)
Key = tuple[str, ...]
Sums = tuple[int, ...]
_TABLES = {"5min": FIVE_MINUTES, "hour": ROLLUPS, "day": DAILY}


@dataclass(frozen=True)
class Difference:
    """One rollup row that is not the sum of its records (`None`: no such row on that side)."""

    tier: str  # "5min", "hour" or "day"
    key: dict[str, str]
    from_records: dict[str, int] | None
    in_rollups: dict[str, int] | None


def _start_of(dialect: str, unit: str) -> ColumnElement[Any]:
    """The start of the record's period (5 minutes, hour or UTC day), as the rollups' `hour` holds it."""
    start: ColumnElement[Any] = literal_column(period_start(unit, dialect, "usage_records.occurred_at"))
    return type_coerce(start, UTCDateTime())


def records_summed(
    dialect: str, economy_id: uuid.UUID | None, start: datetime, end: datetime, unit: str = "hour"
) -> Select[Any]:
    """The rollup rows of `unit` the records of `[start, end)` add up to, in `KEY + MEASURES` order."""
    keys = [
        R.economy_id,
        _start_of(dialect, unit),
        R.user_id,
        func.coalesce(R.room_id, literal(NO_ROOM, R.room_id.type)),
        func.coalesce(R.agent_id, NO_AGENT),
        R.provider,
        R.model,
        R.status,
        func.coalesce(R.api_key_id, literal(NO_API_KEY, R.api_key_id.type)),
    ]
    query = (
        select(
            *keys,
            func.count(),
            *(func.sum(getattr(R, name)) for name in SUMS),
            func.sum(case((R.priced.is_(False), 1), else_=0)),
        )
        .where(R.occurred_at >= start, R.occurred_at < end)
        .group_by(*keys)
    )
    return query.where(R.economy_id == economy_id) if economy_id is not None else query


def _stored(table: Table, economy_id: uuid.UUID | None, start: datetime, end: datetime) -> Select[Any]:
    query = select(*(table.c[name] for name in (*KEY, *MEASURES))).where(
        table.c.hour >= start, table.c.hour < end
    )
    return query.where(table.c.economy_id == economy_id) if economy_id is not None else query


def _moment(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _keyed(rows: Any) -> dict[Key, Sums]:
    """Keys as text (UUID types differ between drivers), periods in UTC ISO form, sums as ints."""
    found: dict[Key, Sums] = {}
    for row in rows:
        key = (str(row[0]), _moment(row[1]).isoformat(), *(str(part) for part in row[2 : len(KEY)]))
        found[key] = tuple(int(value or 0) for value in row[len(KEY) :])
    return found


def _coarser(sums: dict[Key, Sums], unit: str) -> dict[Key, Sums]:
    """The same sums per hour or per day of their period."""
    period = hour_of if unit == "hour" else day_of
    found: dict[Key, Sums] = {}
    for key, values in sums.items():
        coarse = (key[0], period(datetime.fromisoformat(key[1])).isoformat(), *key[2:])
        before = found.get(coarse)
        found[coarse] = (
            values if before is None else tuple(a + b for a, b in zip(before, values, strict=True))
        )
    return found


def _compare(unit: str, expected: dict[Key, Sums], stored: dict[Key, Sums]) -> Iterator[Difference]:
    for key in sorted(expected.keys() | stored.keys()):
        want, have = expected.get(key), stored.get(key)
        if want != have:
            yield Difference(
                tier=unit,
                key=dict(zip(KEY, key, strict=True)),
                from_records=dict(zip(MEASURES, want, strict=True)) if want else None,
                in_rollups=dict(zip(MEASURES, have, strict=True)) if have else None,
            )


async def economies(session: AsyncSession) -> list[uuid.UUID]:
    """Every economy that has rollups or is declared."""
    query = select(U.economy_id).union(select(EconomyRow.id))
    return sorted({uuid.UUID(str(row[0])) for row in await session.execute(query)}, key=str)


async def span(session: AsyncSession, economy_id: uuid.UUID | None) -> tuple[datetime, datetime] | None:
    """The whole UTC days that hold a record or a rollup row (None when there is neither)."""
    records = select(func.min(R.occurred_at), func.max(R.occurred_at))
    rollups = select(func.min(U.hour), func.max(U.hour))
    if economy_id is not None:
        records, rollups = (
            records.where(R.economy_id == economy_id),
            rollups.where(U.economy_id == economy_id),
        )
    moments = [
        m for m in (*(await session.execute(records)).one(), *(await session.execute(rollups)).one()) if m
    ]
    if not moments:
        return None
    return day_of(min(moments)), day_of(max(moments)) + _DAY


def _days(start: datetime, end: datetime) -> Iterator[tuple[datetime, datetime, bool]]:
    """UTC days cut to `[start, end)`, and whether each is whole (only whole days have a daily row)."""
    day = day_of(start)
    while day < end:
        first, last = max(day, start), min(day + _DAY, end)
        yield first, last, first == day and last == day + _DAY
        day += _DAY


async def differences(
    session: AsyncSession, economy_id: uuid.UUID | None, start: datetime, end: datetime
) -> AsyncIterator[Difference]:
    """Every rollup row of the whole hours (and whole days) in `[start, end)` that its records contradict."""
    dialect = session.get_bind().dialect.name
    start, end = hour_of(start), hour_of(end)

    async def stored(unit: str, first: datetime, last: datetime) -> dict[Key, Sums]:
        return _keyed(await session.execute(_stored(_TABLES[unit], economy_id, first, last)))

    for first, last, whole in _days(start, end):
        hours: dict[Key, Sums] = {}
        hour = first
        while hour < last:
            fine = _keyed(
                await session.execute(records_summed(dialect, economy_id, hour, hour + _HOUR, "5min"))
            )
            for difference in _compare("5min", fine, await stored("5min", hour, hour + _HOUR)):
                yield difference
            hours.update(_coarser(fine, "hour"))
            hour += _HOUR
        for difference in _compare("hour", hours, await stored("hour", first, last)):
            yield difference
        if whole:
            for difference in _compare("day", _coarser(hours, "day"), await stored("day", first, last)):
                yield difference


async def lock_out_writers(session: AsyncSession) -> None:
    """Until the caller's transaction ends, no record (and so no rollup delta) can be written.

    PostgreSQL: the usage writer adds to the rollups in the statement that inserts the records, so
    a SHARE lock on the records (taken once every writer already inside has committed) holds every
    writer at its insert. SQLite: the rebuild's first statement takes the single write lock.
    """
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(text("LOCK TABLE usage_records IN SHARE MODE"))


def _hours_summed_by_day(
    dialect: str, economy_id: uuid.UUID | None, start: datetime, end: datetime
) -> Select[Any]:
    """The daily rows the hourly rows of `[start, end)` add up to (hours past retention included)."""
    h = ROLLUPS.c
    day: ColumnElement[Any] = literal_column(period_start("day", dialect, "usage_rollups.hour"))
    keys = [h.economy_id, type_coerce(day, UTCDateTime()), *(h[name] for name in KEY[2:])]
    query = (
        select(*keys, *(func.sum(h[name]) for name in MEASURES))
        .where(h.hour >= start, h.hour < end)
        .group_by(*keys)
    )
    return query.where(h.economy_id == economy_id) if economy_id is not None else query


async def rebuild(
    session: AsyncSession, economy_id: uuid.UUID | None, start: datetime, end: datetime
) -> None:
    """Replace the rollups of the whole hours in `[start, end)` with their records' sums, and the
    daily rows of the whole days in it with their hours' sums.

    In the caller's transaction, which it first makes the only writer of records (`lock_out_writers`),
    so that it is safe on the current hour too: a call's record waits until the rebuild commits.
    """
    await lock_out_writers(session)
    dialect = session.get_bind().dialect.name
    start, end = hour_of(start), hour_of(end)
    for unit in ("5min", "hour"):
        await _delete(session, unit, economy_id, start, end)
        summed = records_summed(dialect, economy_id, start, end, unit)
        # In key order: PostgreSQL's heap then holds a period's rows together, as the writer leaves them.
        ordered = summed.order_by(*(literal_column(str(n)) for n in range(1, len(KEY) + 1)))
        await session.execute(insert(_TABLES[unit]).from_select([*KEY, *MEASURES], ordered))
    for day, _, whole in _days(start, end):
        if whole:
            await rebuild_day(session, economy_id, day)


async def rebuild_day(session: AsyncSession, economy_id: uuid.UUID | None, day: datetime) -> None:
    """Replace the daily rows of the UTC day `day` with the sums of its hourly rows."""
    await lock_out_writers(session)
    dialect = session.get_bind().dialect.name
    await _delete(session, "day", economy_id, day, day + _DAY)
    summed = _hours_summed_by_day(dialect, economy_id, day, day + _DAY)
    await session.execute(insert(DAILY).from_select([*KEY, *MEASURES], summed))


async def _delete(
    session: AsyncSession, unit: str, economy_id: uuid.UUID | None, start: datetime, end: datetime
) -> None:
    table = _TABLES[unit]
    removal = delete(table).where(table.c.hour >= start, table.c.hour < end)
    if economy_id is not None:
        removal = removal.where(table.c.economy_id == economy_id)
    await session.execute(removal)
