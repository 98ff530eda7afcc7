"""Rollups (both tiers) recomputed from the records, compared with the stored ones, rebuilt where they differ.

Works a day at a time, so memory stays bounded by one day's keys however long the history.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, case, delete, func, insert, literal, select, type_coerce
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.db.types import UTCDateTime
from switchboard.metering.models import UsageRecordRow as R
from switchboard.metering.models import UsageRollupRow as U
from switchboard.metering.rollups import (
    DAILY,
    KEY,
    MEASURES,
    NO_AGENT,
    NO_ROOM,
    ROLLUPS,
    SUMS,
    day_of,
    hour_of,
)

_DAY = timedelta(days=1)
Key = tuple[str, ...]
Sums = tuple[int, ...]


@dataclass(frozen=True)
class Difference:
    """One rollup row that is not the sum of its records (`None`: no such row on that side)."""

    tier: str  # "hour" or "day"
    key: dict[str, str]
    from_records: dict[str, int] | None
    in_rollups: dict[str, int] | None


def _start_of(dialect: str, unit: str) -> ColumnElement[Any]:
    """The first moment of the hour or UTC day a record falls in, as the rollups' `hour` holds it."""
    if dialect == "postgresql":
        return type_coerce(func.date_trunc(unit, R.occurred_at, "UTC"), UTCDateTime())
    # SQLite keeps "YYYY-MM-DD HH:MM:SS.ffffff" text: the period's start is a prefix and zeros.
    if unit == "hour":
        return type_coerce(func.substr(R.occurred_at, 1, 13).concat(":00:00.000000"), UTCDateTime())
    return type_coerce(func.substr(R.occurred_at, 1, 10).concat(" 00:00:00.000000"), UTCDateTime())


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


def _keyed(rows: Any) -> dict[Key, Sums]:
    """Keys as text (UUID types differ between drivers), periods in UTC ISO form, sums as ints."""
    found: dict[Key, Sums] = {}
    for row in rows:
        start = row[1] if isinstance(row[1], datetime) else datetime.fromisoformat(str(row[1]))
        key = (str(row[0]), hour_of(start).isoformat(), *(str(part) for part in row[2 : len(KEY)]))
        found[key] = tuple(int(value or 0) for value in row[len(KEY) :])
    return found


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
    for first, last, whole in _days(start, end):
        tiers = [("hour", ROLLUPS)] + ([("day", DAILY)] if whole else [])
        for unit, table in tiers:
            expected = _keyed(await session.execute(records_summed(dialect, economy_id, first, last, unit)))
            stored = _keyed(await session.execute(_stored(table, economy_id, first, last)))
            for key in sorted(expected.keys() | stored.keys()):
                want, have = expected.get(key), stored.get(key)
                if want != have:
                    yield Difference(
                        tier=unit,
                        key=dict(zip(KEY, key, strict=True)),
                        from_records=dict(zip(MEASURES, want, strict=True)) if want else None,
                        in_rollups=dict(zip(MEASURES, have, strict=True)) if have else None,
                    )


async def rebuild(
    session: AsyncSession, economy_id: uuid.UUID | None, start: datetime, end: datetime
) -> None:
    """Replace the rollups of the whole hours (and whole days) in `[start, end)` with their records' sums.

    In the caller's transaction. Writes to those hours meanwhile would be counted twice or lost:
    rebuild past hours, or stop the gateway.
    """
    dialect = session.get_bind().dialect.name
    start, end = hour_of(start), hour_of(end)
    spans: list[tuple[str, Table, datetime, datetime]] = [("hour", ROLLUPS, start, end)]
    spans += [("day", DAILY, first, last) for first, last, whole in _days(start, end) if whole]
    for unit, table, first, last in spans:
        removal = delete(table).where(table.c.hour >= first, table.c.hour < last)
        if economy_id is not None:
            removal = removal.where(table.c.economy_id == economy_id)
        await session.execute(removal)
        await session.execute(
            insert(table).from_select(
                [*KEY, *MEASURES], records_summed(dialect, economy_id, first, last, unit)
            )
        )
