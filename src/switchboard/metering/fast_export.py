"""The export without an ORM object, pydantic model or csv writer per record.

Each line is exactly the bytes `export.encode_page` (csv module, pydantic and orjson) makes of the
same record: ISO times without zero microseconds, `true`/`false`, empty cells for null, csv's
minimal quoting, JSON string escapes (tests/metering/test_fast_export.py compares the two on awkward
records). PostgreSQL writes the lines itself (one SQL expression per format, below); SQLite hands
over raw values to a generated Python function (metering/export_lines.py), faster there. Pages are
keyset pages in (occurred_at, id) order, each one statement on its own connection checkout, so
memory and transactions stay short however large the export.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Literal, cast

from sqlalchemy import BigInteger, Boolean, Integer, String, Table, Uuid
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.db.types import UTCDateTime
from switchboard.metering.export_lines import Kind, LineOf, line_function
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.schemas import UsageRecordOut
from switchboard.metering.usage_queries import UsageFilter

Format = Literal["csv", "ndjson"]
COLUMNS: tuple[str, ...] = tuple(UsageRecordOut.model_fields)
_TABLE = cast(Table, UsageRecordRow.__table__)


def _kind(name: str) -> Kind:
    column_type = _TABLE.c[name].type
    if isinstance(column_type, Uuid):
        return "uuid"
    if isinstance(column_type, UTCDateTime):
        return "time"
    if isinstance(column_type, Boolean):
        return "bool"
    if isinstance(column_type, Integer | BigInteger):
        # An integer the API sends as a string (cost: any size stays exact in JSON).
        return "int_text" if UsageRecordOut.model_fields[name].annotation is str else "int"
    if isinstance(column_type, String):
        return "text"
    raise TypeError(f"the fast export does not know how to write {name} ({column_type})")


class _Postgres:
    @staticmethod
    def uuid(c: str) -> str:
        return f"{c}::text"

    @staticmethod
    def time(c: str, zone: str) -> str:
        utc = f"({c} AT TIME ZONE 'UTC')"
        whole = f"extract(microseconds FROM {c})::bigint % 1000000 = 0"
        fraction = f"CASE WHEN {whole} THEN '' ELSE to_char({utc},'.US') END"
        return f"to_char({utc},'YYYY-MM-DD\"T\"HH24:MI:SS')||{fraction}||'{zone}'"

    @staticmethod
    def int(c: str) -> str:
        return f"{c}::text"

    @staticmethod
    def csv_text(c: str) -> str:
        return (
            f"CASE WHEN strpos({c},',')>0 OR strpos({c},'\"')>0 OR strpos({c},chr(10))>0 "
            f"THEN '\"'||replace({c},'\"','\"\"')||'\"' ELSE {c} END"
        )

    @staticmethod
    def json_text(c: str) -> str:
        return f"to_json({c})::text"


def _bool(c: str) -> str:
    return f"CASE WHEN {c} THEN 'true' ELSE 'false' END"


def _cell(sql: type[_Postgres], name: str, fmt: Format) -> str:
    """One column's text in the line; null is an empty cell (CSV) or `null` (JSON)."""
    c = f'"{name}"'
    kind = _kind(name)
    if fmt == "csv":
        value = {
            "uuid": sql.uuid,
            "text": sql.csv_text,
            "time": lambda c: sql.time(c, "+00:00"),  # datetime.isoformat()
            "bool": _bool,
            "int": sql.int,
            "int_text": sql.int,
        }[kind](c)
        return f"coalesce({value},'')" if _TABLE.c[name].nullable else value
    quoted: dict[Kind, Callable[[str], str]] = {
        "uuid": lambda c: f"'\"'||{sql.uuid(c)}||'\"'",
        "text": sql.json_text,
        "time": lambda c: f"'\"'||{sql.time(c, 'Z')}||'\"'",  # pydantic's JSON form of a UTC time
        "bool": _bool,
        "int": sql.int,
        "int_text": lambda c: f"'\"'||{sql.int(c)}||'\"'",
    }
    value = quoted[kind](c)
    return f"coalesce({value},'null')" if _TABLE.c[name].nullable else value


def line_sql(fmt: Format) -> str:
    """PostgreSQL's expression of a record's export line (without its newline)."""
    sql = _Postgres
    if fmt == "csv":
        return "||','||".join(_cell(sql, name, fmt) for name in COLUMNS)
    parts = [
        f"'{'{' if index == 0 else ','}\"{name}\":'||{_cell(sql, name, fmt)}"
        for index, name in enumerate(COLUMNS)
    ]
    return "||".join(parts) + "||'}'"


class _Pages:
    """The page query of one filter, with parameters already in the driver's form."""

    def __init__(self, dialect: Dialect, usage: UsageFilter, fmt: Format) -> None:
        self._postgres = dialect.name == "postgresql"
        self._filters: list[tuple[str, str, object]] = [
            (column, operator, self._bind(dialect, column, value))
            for column, value, operator in (
                ("economy_id", usage.economy_id, "="),
                ("user_id", usage.user_id, "="),
                ("occurred_at", usage.end, "<"),
            )
            if value is not None
        ]
        self._start = self._bind(dialect, "occurred_at", usage.start) if usage.start is not None else None
        if self._postgres:
            self._select = f"{line_sql(fmt)}, occurred_at, id"
            self.line: LineOf | None = None
            self.key_at: tuple[int, int] = (1, 2)
        else:
            self._select = ", ".join(f'"{name}"' for name in COLUMNS)
            self.line = line_function(
                [(name, _kind(name), bool(_TABLE.c[name].nullable)) for name in COLUMNS], fmt
            )
            self.key_at = (COLUMNS.index("occurred_at"), COLUMNS.index("id"))

    @staticmethod
    def _bind(dialect: Dialect, column: str, value: object) -> object:
        processor = _TABLE.c[column].type.dialect_impl(dialect).bind_processor(dialect)
        return processor(value) if processor is not None else value

    def query(self, after: tuple[object, object] | None, limit: int) -> tuple[str, list[object]]:
        """`after`: the last page's (occurred_at, id) as the driver returned them."""
        filters = list(self._filters)
        # The lower bound is the cursor's time once there is one: given the range's start as well,
        # SQLite would walk the index from the start on every page (quadratic over an export).
        lower = self._start
        if after is not None and (lower is None or after[0] > lower):  # type: ignore[operator]
            lower = after[0]
        if lower is not None:
            filters.append(("occurred_at", ">=", lower))
        where, values = [], []
        for column, operator, value in filters:
            values.append(value)
            where.append(f"{column} {operator} {self._mark(len(values))}")
        if after is not None:
            values.extend(after)
            where.append(f"(occurred_at, id) > ({self._mark(len(values) - 1)}, {self._mark(len(values))})")
        values.append(limit)
        condition = " AND ".join(where) or "TRUE"
        # Only this module's own SQL and column names go into the text; every value is a parameter.
        sql = (
            f"SELECT {self._select} FROM usage_records WHERE {condition} "  # noqa: S608
            f"ORDER BY occurred_at, id LIMIT {self._mark(len(values))}"
        )
        return sql, values

    def _mark(self, position: int) -> str:
        return f"${position}" if self._postgres else "?"


async def _page(engine: AsyncEngine, sql: str, values: Sequence[object]) -> list[Any]:
    """One statement on a connection of its own (autocommit: no transaction outlives the page)."""
    async with engine.connect() as connection:
        driver: Any = (await connection.get_raw_connection()).driver_connection
        if engine.dialect.name == "postgresql":
            return list(await driver.fetch(sql, *values))
        cursor = await driver.execute(sql, values)  # aiosqlite: runs on its own thread
        try:
            return list(await cursor.fetchall())
        finally:
            await cursor.close()


async def fast_chunks(
    sessionmaker: async_sessionmaker[AsyncSession], usage: UsageFilter, fmt: Format, page_size: int
) -> AsyncIterator[bytes]:
    """The export's bytes, one chunk per page of `page_size` records.

    The next page is read while this one is formatted and sent: the database (or SQLite's thread)
    and the formatting overlap. At most two pages are in memory.
    """
    engine = sessionmaker.kw.get("bind")
    if not isinstance(engine, AsyncEngine):
        raise TypeError("the export needs a sessionmaker bound to an AsyncEngine")
    pages = _Pages(engine.dialect, usage, fmt)
    when, record_id = pages.key_at
    if fmt == "csv":
        yield (",".join(COLUMNS) + "\n").encode()
    reading: asyncio.Future[list[Any]] | None = asyncio.ensure_future(
        _page(engine, *pages.query(None, page_size))
    )
    try:
        while reading is not None:
            rows = await reading
            reading = None
            if len(rows) == page_size:
                after = (rows[-1][when], rows[-1][record_id])
                reading = asyncio.ensure_future(_page(engine, *pages.query(after, page_size)))
            if rows:
                line = pages.line
                lines = [row[0] for row in rows] if line is None else [line(row) for row in rows]
                yield ("\n".join(lines) + "\n").encode()
    finally:
        if reading is not None:  # the reader went away (a client that disconnected)
            reading.cancel()
