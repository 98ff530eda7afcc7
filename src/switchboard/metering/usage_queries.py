"""Reads of usage records: keyset pages in (occurred_at, id) order and grouped summaries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import ColumnElement, and_, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.errors import ValidationFailed
from switchboard.kit.pagination import decode_cursor, encode_cursor
from switchboard.metering.models import UsageRecordRow as R
from switchboard.metering.schemas import GroupBy, SummaryOut, SummaryValue, UsageRecordOut

SUMMED = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "reasoning_tokens",
    "cost",
    "cache_write_tokens",
)
Key = tuple[datetime, uuid.UUID]


@dataclass(frozen=True)
class UsageFilter:
    economy_id: uuid.UUID | None = None
    user_id: uuid.UUID | None = None
    start: datetime | None = None  # inclusive
    end: datetime | None = None  # exclusive

    def clauses(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        if self.economy_id is not None:
            found.append(R.economy_id == self.economy_id)
        if self.user_id is not None:
            found.append(R.user_id == self.user_id)
        if self.start is not None:
            found.append(R.occurred_at >= self.start)
        if self.end is not None:
            found.append(R.occurred_at < self.end)
        return found


def cursor_after(row: R) -> str:
    return encode_cursor([row.occurred_at.isoformat(), str(row.id)])


def key_from_cursor(cursor: str | None) -> Key | None:
    raw = decode_cursor(cursor)
    if raw is None:
        return None
    try:
        when = datetime.fromisoformat(str(raw[0]))
        record_id = uuid.UUID(str(raw[1]))
    except (ValueError, IndexError):
        raise ValidationFailed("cursor is not valid", param="cursor") from None
    if len(raw) != 2 or when.tzinfo is None:
        raise ValidationFailed("cursor is not valid", param="cursor")
    return when, record_id


async def records_after(session: AsyncSession, usage: UsageFilter, after: Key | None, limit: int) -> list[R]:
    if after is not None and (usage.start is None or after[0] > usage.start):
        # The cursor's time as the lower bound: with the range's start instead, SQLite walks the
        # index from the start to reach a deep page (each page slower than the last).
        usage = replace(usage, start=after[0])
    query = select(R).where(*usage.clauses()).order_by(R.occurred_at, R.id).limit(limit)
    if after is not None:
        when, record_id = after
        query = query.where(or_(R.occurred_at > when, and_(R.occurred_at == when, R.id > record_id)))
    return list(await session.scalars(query))


def record_out(row: R) -> UsageRecordOut:
    values: dict[str, Any] = {name: getattr(row, name) for name in UsageRecordOut.model_fields}
    values["cost"] = str(row.cost)
    if row.prices is not None:
        values["prices"] = orjson.loads(row.prices)
    return UsageRecordOut.model_validate(values)


def _group_columns(group_by: GroupBy, dialect: str) -> list[Any]:
    if group_by == "day":
        if dialect == "postgresql":
            return [func.to_char(func.timezone("UTC", R.occurred_at), "YYYY-MM-DD")]
        # SQLite keeps UTC timestamps as "YYYY-MM-DD HH:MM:SS.ffffff" text.
        return [func.substr(R.occurred_at, 1, 10)]
    if group_by == "model":
        return [R.provider, R.model]
    column = {"user": R.user_id, "agent": R.agent_id, "room": R.room_id}[group_by]
    return [column]


def _key_text(group_by: GroupBy, parts: tuple[Any, ...]) -> str | None:
    if group_by == "model":
        return f"{parts[0]}/{parts[1]}"
    return None if parts[0] is None else str(parts[0])


async def summarize(session: AsyncSession, usage: UsageFilter, group_by: GroupBy) -> SummaryOut:
    """Rows per group; totals are the sums of the rows, which are the sums of the records."""
    keys = _group_columns(group_by, session.get_bind().dialect.name)
    query = (
        select(
            *keys,
            func.count(),
            *(func.coalesce(func.sum(getattr(R, name)), 0) for name in SUMMED),
            func.coalesce(func.sum(case((R.priced.is_(False), 1), else_=0)), 0),
        )
        .where(*usage.clauses())
        .group_by(*keys)
    )
    rows: list[dict[str, SummaryValue]] = []
    totals = dict.fromkeys(("requests", *SUMMED, "unpriced_requests"), 0)
    for result in (await session.execute(query)).all():
        parts = tuple(result[: len(keys)])
        counts = [int(value) for value in result[len(keys) :]]
        named = dict(zip(("requests", *SUMMED, "unpriced_requests"), counts, strict=True))
        for name, value in named.items():
            totals[name] += value
        row: dict[str, SummaryValue] = {group_by: _key_text(group_by, parts)}
        row.update({name: str(value) if name == "cost" else value for name, value in named.items()})
        rows.append(row)
    rows.sort(key=lambda row: (row[group_by] is None, str(row[group_by] or "")))
    total_out: dict[str, SummaryValue] = {
        name: str(value) if name == "cost" else value for name, value in totals.items()
    }
    return SummaryOut(group_by=group_by, rows=rows, totals=total_out)
