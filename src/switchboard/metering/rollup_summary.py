"""Usage summaries from the rollups (daily, hourly, per 5 minutes) and records only for what is left.

A range `[from, to)` is covered coarsest first: the daily rollups for the whole UTC days inside it,
the hourly rollups for the whole hours left at either end, the 5-minute rollups for the whole
periods of 5 minutes left after those, and the records of at most two partial ones. The answer is
the same as summing every record (tests/metering/test_rollups.py checks it on random ranges), at a
cost that grows with the periods and keys in the range, hardly with the number of calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.db.write_transaction import LedgerConnection
from switchboard.metering.rollups import (
    DAILY,
    FIVE_MINUTES,
    MEASURES,
    NO_AGENT,
    NO_ROOM,
    ROLLUPS,
    day_of,
    five_minutes_of,
    hour_of,
)
from switchboard.metering.schemas import GroupBy, SummaryOut, SummaryValue
from switchboard.metering.usage_queries import UsageFilter, summarize

Totals = dict[str | None, list[int]]
Bound = datetime | None  # None: unbounded
# Coarsest first: each tier's table, how a moment rounds down to its period, and the period's length.
_LEVELS: tuple[tuple[Table, Callable[[datetime], datetime], timedelta], ...] = (
    (DAILY, day_of, timedelta(days=1)),
    (ROLLUPS, hour_of, timedelta(hours=1)),
    (FIVE_MINUTES, five_minutes_of, timedelta(minutes=5)),
)


def _ceil(moment: datetime, floor: Callable[[datetime], datetime], length: timedelta) -> datetime:
    """The first period start at or after `moment`."""
    start = floor(moment)
    return start if start == moment else start + length


def cover(start: Bound, end: Bound) -> list[tuple[Table | None, Bound, Bound]]:
    """`[start, end)` as periods of each tier (None: the records), whole periods from the coarsest.

    Raises OverflowError for a bound within the last day of year 9999.
    """
    found: list[tuple[Table | None, Bound, Bound]] = []

    def split(low: Bound, high: Bound, level: int) -> None:
        if level == len(_LEVELS):
            found.append((None, low, high))
            return
        table, floor, length = _LEVELS[level]
        first = None if low is None else _ceil(low, floor, length)
        last = None if high is None else floor(high)
        if first is not None and last is not None and first >= last:
            split(low, high, level + 1)  # no whole period of this tier inside
            return
        found.append((table, first, last))
        if low is not None and first is not None and low < first:
            split(low, first, level + 1)
        if high is not None and last is not None and last < high:
            split(last, high, level + 1)

    split(start, end, 0)
    return found


def _group_columns(table: Table, group_by: GroupBy) -> list[Any]:
    if group_by == "day":
        # The period itself, named as a day in Python: the rows come in the primary key's order,
        # so the database sums them as they come, with no sort and no text made per row.
        return [table.c.hour]
    if group_by == "model":
        return [table.c.provider, table.c.model]
    return [table.c[{"user": "user_id", "agent": "agent_id", "room": "room_id"}[group_by]]]


def _key_text(group_by: GroupBy, parts: tuple[Any, ...]) -> str | None:
    if group_by == "model":
        return f"{parts[0]}/{parts[1]}"
    value = parts[0]
    if group_by == "day":
        return day_of(value).date().isoformat()
    if value is None or (group_by == "agent" and value == NO_AGENT):
        return None
    if group_by == "room" and str(value) == str(NO_ROOM):  # asyncpg has a UUID type of its own
        return None
    return str(value)


async def _add_rollups(
    session: AsyncSession,
    totals: Totals,
    usage: UsageFilter,
    group_by: GroupBy,
    periods: list[tuple[Table, Bound, Bound]],
) -> None:
    """Add the rows of each table whose period starts in its `[first, last)`.

    A statement per range (rather than ORed ranges, which PostgreSQL may read with a sequential
    scan): each reads its slice of the primary key.
    """
    for table, first, last in periods:
        keys = _group_columns(table, group_by)
        query = (
            select(*keys, *(func.sum(table.c[name]) for name in MEASURES))
            .where(table.c.economy_id == usage.economy_id)
            .group_by(*keys)
        )
        if first is not None:
            query = query.where(table.c.hour >= first)
        if last is not None:
            query = query.where(table.c.hour < last)
        for result in (await session.execute(query)).all():
            key = _key_text(group_by, tuple(result[: len(keys)]))
            _add(totals, key, [int(value or 0) for value in result[len(keys) :]])


def _add(totals: Totals, key: str | None, values: list[int]) -> None:
    found = totals.get(key)
    if found is None:
        totals[key] = list(values)
        return
    for index, value in enumerate(values):
        found[index] += value


def _from_summary(summary: SummaryOut, totals: Totals) -> None:
    for row in summary.rows:
        _add(totals, row[summary.group_by], [int(row[name] or 0) for name in MEASURES])  # type: ignore[arg-type]


def _out(group_by: GroupBy, totals: Totals) -> SummaryOut:
    rows: list[dict[str, SummaryValue]] = []
    sums = [0] * len(MEASURES)
    for key, values in totals.items():
        row: dict[str, SummaryValue] = {group_by: key}
        row.update({name: str(v) if name == "cost" else v for name, v in zip(MEASURES, values, strict=True)})
        rows.append(row)
        sums = [a + b for a, b in zip(sums, values, strict=True)]
    rows.sort(key=lambda row: (row[group_by] is None, str(row[group_by] or "")))
    total_out: dict[str, SummaryValue] = {
        name: str(value) if name == "cost" else value for name, value in zip(MEASURES, sums, strict=True)
    }
    return SummaryOut(group_by=group_by, rows=rows, totals=total_out)


async def summarize_fast(session: AsyncSession, usage: UsageFilter, group_by: GroupBy) -> SummaryOut:
    """Rows per group and their totals, equal to summing the records of `usage`."""
    if usage.economy_id is None or usage.user_id is not None:
        return await summarize(session, usage, group_by)  # rollups are kept per economy
    try:
        parts = cover(usage.start, usage.end)
    except OverflowError:  # a bound in the last day of year 9999
        return await summarize(session, usage, group_by)
    totals: Totals = {}
    periods = [(tier, first, last) for tier, first, last in parts if tier is not None]
    if periods:
        await _add_rollups(session, totals, usage, group_by, periods)
    for tier, first, last in parts:
        if tier is None:
            edge = UsageFilter(economy_id=usage.economy_id, start=first, end=last)
            _from_summary(await summarize(session, edge, group_by), totals)
    return _out(group_by, totals)


async def counted_in_rollups(
    conn: LedgerConnection,
    subject_type: str,
    subject: object,
    economy_id: uuid.UUID | None,
    metric: str,
    start: datetime | None,
) -> int | None:
    """A limit subject's usage since `start` (a whole hour, or None for ever), read from the rollups.

    Daily rows from the first whole day on (today's holds today so far), hourly rows before it.
    None when the rollups cannot say (a start within an hour). Kept past record retention, and far
    fewer rows than the records.
    """
    column_name = {
        "economy": "economy_id",
        "user": "user_id",
        "room": "room_id",
        "agent": "agent_id",
        "api_key": "api_key_id",
    }.get(subject_type)
    if column_name is None or (start is not None and start != hour_of(start)):
        return None
    first_day = None if start is None else _ceil(start, day_of, timedelta(days=1))
    total: Any = func.coalesce(_counted(DAILY, column_name, subject, economy_id, metric, first_day, None), 0)
    if start is not None and first_day is not None and start < first_day:  # one round trip for both
        hours = _counted(ROLLUPS, column_name, subject, economy_id, metric, start, first_day)
        total = total + func.coalesce(hours, 0)
    return int(await conn.scalar(select(total)) or 0)


def _counted(
    table: Table,
    column_name: str,
    subject: object,
    economy_id: uuid.UUID | None,
    metric: str,
    first: datetime | None,
    last: datetime | None,
) -> Any:
    """The subject's `metric` summed over the rows of `table` whose period starts in `[first, last)`."""
    c = table.c
    measure: Any = {
        "cost": func.sum(c.cost),
        "tokens": func.sum(c.prompt_tokens + c.completion_tokens),
        "requests": func.sum(c.requests),
    }[metric]
    query = select(measure).where(c[column_name] == subject)
    if economy_id is not None:
        query = query.where(c.economy_id == economy_id)
    if first is not None:
        query = query.where(c.hour >= first)
    if last is not None:
        query = query.where(c.hour < last)
    return query.scalar_subquery()
