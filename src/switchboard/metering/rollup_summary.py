"""Usage summaries from the rollups (daily for whole days, hourly for whole hours) and records for the rest.

A range `[from, to)` reads the daily rollups for the whole UTC days inside it, the hourly rollups
for the whole hours before the first and after the last of those days, and the records of at most
two partial hours at its ends. The answer is the same as summing every record
(tests/metering/test_rollups.py checks it on random ranges), at a cost that grows with the days and
keys in the range rather than with the number of calls.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.db.write_transaction import LedgerConnection
from switchboard.metering.models import UsageRollupRow as U
from switchboard.metering.rollups import DAILY, MEASURES, NO_AGENT, NO_ROOM, ROLLUPS, day_of, hour_of
from switchboard.metering.schemas import GroupBy, SummaryOut, SummaryValue
from switchboard.metering.usage_queries import UsageFilter, summarize

_HOUR = timedelta(hours=1)
_DAY = timedelta(days=1)
Totals = dict[str | None, list[int]]


def _ceil_hour(moment: datetime) -> datetime:
    floor = hour_of(moment)
    return floor if floor == moment else floor + _HOUR


def _ceil_day(moment: datetime) -> datetime:
    floor = day_of(moment)
    return floor if floor == moment else floor + _DAY


def _group_columns(table: Table, group_by: GroupBy, dialect: str) -> list[Any]:
    if group_by == "day":
        if dialect == "postgresql":
            return [func.to_char(func.timezone("UTC", table.c.hour), "YYYY-MM-DD")]
        return [func.substr(table.c.hour, 1, 10)]  # SQLite keeps "YYYY-MM-DD HH:MM:SS.ffffff" text
    if group_by == "model":
        return [table.c.provider, table.c.model]
    return [table.c[{"user": "user_id", "agent": "agent_id", "room": "room_id"}[group_by]]]


def _key_text(group_by: GroupBy, parts: tuple[Any, ...]) -> str | None:
    if group_by == "model":
        return f"{parts[0]}/{parts[1]}"
    value = parts[0]
    if value is None or (group_by == "agent" and value == NO_AGENT):
        return None
    if group_by == "room" and str(value) == str(NO_ROOM):  # asyncpg has a UUID type of its own
        return None
    return str(value)


async def _add_rollups(
    session: AsyncSession,
    totals: Totals,
    table: Table,
    usage: UsageFilter,
    group_by: GroupBy,
    between: tuple[datetime | None, datetime | None],
) -> None:
    """Add the rows of `table` whose period starts in `[first, last)` (None: unbounded)."""
    first, last = between
    if first is not None and last is not None and first >= last:
        return
    keys = _group_columns(table, group_by, session.get_bind().dialect.name)
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
        first = _ceil_hour(usage.start) if usage.start is not None else None
        first_day = _ceil_day(first) if first is not None else None
    except OverflowError:  # a start in the last day of year 9999
        return await summarize(session, usage, group_by)
    last = hour_of(usage.end) if usage.end is not None else None
    if first is not None and last is not None and first >= last:
        return await summarize(session, usage, group_by)  # no whole hour in the range
    last_day = day_of(last) if last is not None else None
    totals: Totals = {}
    if first_day is not None and last_day is not None and first_day >= last_day:
        await _add_rollups(session, totals, ROLLUPS, usage, group_by, (first, last))  # no whole day
    else:
        await _add_rollups(session, totals, DAILY, usage, group_by, (first_day, last_day))
        if first is not None:
            await _add_rollups(session, totals, ROLLUPS, usage, group_by, (first, first_day))
        if last is not None:
            await _add_rollups(session, totals, ROLLUPS, usage, group_by, (last_day, last))
    if usage.start is not None and first is not None and usage.start < first:
        edge = UsageFilter(economy_id=usage.economy_id, start=usage.start, end=first)
        _from_summary(await summarize(session, edge, group_by), totals)
    if usage.end is not None and last is not None and last < usage.end:
        edge = UsageFilter(economy_id=usage.economy_id, start=last, end=usage.end)
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

    None when the rollups cannot say (API keys are not part of their key; a start within an hour).
    Kept past record retention, and far fewer rows than the records.
    """
    column = {"economy": U.economy_id, "user": U.user_id, "room": U.room_id, "agent": U.agent_id}.get(
        subject_type
    )
    if column is None or (start is not None and start != hour_of(start)):
        return None
    measure: Any = {
        "cost": func.sum(U.cost),
        "tokens": func.sum(U.prompt_tokens + U.completion_tokens),
        "requests": func.sum(U.requests),
    }[metric]
    query = select(func.coalesce(measure, 0)).where(column == subject)
    if economy_id is not None:
        query = query.where(U.economy_id == economy_id)
    if start is not None:
        query = query.where(U.hour >= start)
    return int(await conn.scalar(query) or 0)
