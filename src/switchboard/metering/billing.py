"""The billing read use cases: an economy's records, summaries and export, and a caller's own records."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.auth.principal import Principal
from switchboard.kit.clock import utcnow
from switchboard.kit.pagination import Page, check_limit
from switchboard.metering.access import usage_reader
from switchboard.metering.export import MEDIA_TYPES, ExportFormat, export_chunks
from switchboard.metering.rollup_summary import summarize_fast
from switchboard.metering.schemas import GroupBy, SummaryOut, UsageRecordOut
from switchboard.metering.timerange import parse_range
from switchboard.metering.usage_queries import (
    UsageFilter,
    cursor_after,
    key_from_cursor,
    record_out,
    records_after,
)


async def _page(
    session: AsyncSession, usage: UsageFilter, cursor: str | None, limit: int
) -> Page[UsageRecordOut]:
    rows = await records_after(session, usage, key_from_cursor(cursor), limit + 1)
    page = rows[:limit]
    return Page(
        data=[record_out(row) for row in page],
        next_cursor=cursor_after(page[-1]) if len(rows) > limit and page else None,
    )


async def economy_usage(
    session: AsyncSession,
    principal: Principal,
    ref: str,
    from_: str | None,
    to: str | None,
    cursor: str | None,
    limit: int,
) -> Page[UsageRecordOut]:
    economy = await usage_reader(session, principal, ref)
    check_limit(limit)
    start, end = parse_range(from_, to)
    return await _page(session, UsageFilter(economy_id=economy.id, start=start, end=end), cursor, limit)


async def economy_summary(
    session: AsyncSession,
    principal: Principal,
    ref: str,
    from_: str | None,
    to: str | None,
    group_by: GroupBy,
) -> SummaryOut:
    economy = await usage_reader(session, principal, ref)
    start, end = parse_range(from_, to)
    return await summarize_fast(session, UsageFilter(economy_id=economy.id, start=start, end=end), group_by)


@dataclass(frozen=True)
class Export:
    chunks: AsyncIterator[bytes]
    media_type: str
    filename: str


async def economy_export(
    session: AsyncSession,
    sessionmaker: async_sessionmaker[AsyncSession],
    principal: Principal,
    ref: str,
    from_: str | None,
    to: str | None,
    fmt: ExportFormat,
) -> Export:
    """Checks run now (so errors get a proper status); the rows are read while the body streams."""
    economy = await usage_reader(session, principal, ref)
    start, end = parse_range(from_, to)
    # Without `to`, the export is what existed when it started, not whatever arrives while it runs.
    usage = UsageFilter(economy_id=economy.id, start=start, end=end or utcnow())
    return Export(export_chunks(sessionmaker, usage, fmt), MEDIA_TYPES[fmt], f"usage-{economy.slug}.{fmt}")


async def my_usage(
    session: AsyncSession,
    principal: Principal,
    from_: str | None,
    to: str | None,
    cursor: str | None,
    limit: int,
) -> Page[UsageRecordOut]:
    check_limit(limit)
    start, end = parse_range(from_, to)
    return await _page(session, UsageFilter(user_id=principal.user_id, start=start, end=end), cursor, limit)
