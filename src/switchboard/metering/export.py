"""CSV and NDJSON export of usage records, produced page by page so memory stays flat.

`export_chunks` has the database write the lines (metering/fast_export.py); `orm_export_chunks`,
which builds each record's line in Python, is the reference its bytes are tested against.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Literal

import orjson
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.metering.fast_export import fast_chunks
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.schemas import UsageRecordOut
from switchboard.metering.usage_queries import Key, UsageFilter, record_out, records_after

ExportFormat = Literal["csv", "ndjson"]
COLUMNS: tuple[str, ...] = tuple(UsageRecordOut.model_fields)
# Records per page: per-page costs (a query, a connection checkout) vanish beside 10,000 lines.
PAGE_SIZE = 10_000
MEDIA_TYPES: dict[str, str] = {"csv": "text/csv; charset=utf-8", "ndjson": "application/x-ndjson"}


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):  # a record's `prices`, as the JSON text it is stored as
        return orjson.dumps(value).decode()
    return str(value)


def _csv_lines(rows: Sequence[Sequence[object]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows([[_cell(value) for value in row] for row in rows])
    return buffer.getvalue().encode()


def encode_page(rows: Sequence[UsageRecordRow], fmt: ExportFormat) -> bytes:
    records = [record_out(row) for row in rows]
    if fmt == "ndjson":
        return b"".join(orjson.dumps(record.model_dump(mode="json")) + b"\n" for record in records)
    return _csv_lines([[getattr(record, name) for name in COLUMNS] for record in records])


def export_chunks(
    sessionmaker: async_sessionmaker[AsyncSession],
    usage: UsageFilter,
    fmt: ExportFormat,
    page_size: int | None = None,
) -> AsyncIterator[bytes]:
    """Keyset pages, each one statement on its own connection; the database formats the lines."""
    return fast_chunks(sessionmaker, usage, fmt, page_size or PAGE_SIZE)


async def orm_export_chunks(
    sessionmaker: async_sessionmaker[AsyncSession],
    usage: UsageFilter,
    fmt: ExportFormat,
    page_size: int | None = None,
) -> AsyncIterator[bytes]:
    """Each page is read in its own short transaction (keyset, not OFFSET), then encoded and sent."""
    page_size = page_size or PAGE_SIZE
    if fmt == "csv":
        yield _csv_lines([COLUMNS])
    after: Key | None = None
    while True:
        async with sessionmaker() as session:
            rows = await records_after(session, usage, after, page_size)
        if rows:
            yield encode_page(rows, fmt)
        if len(rows) < page_size:
            return
        after = (rows[-1].occurred_at, rows[-1].id)
