"""The export without an ORM object, pydantic model or csv writer per record.

Each line is exactly the bytes `export.encode_page` (csv module, pydantic and orjson) makes of the
same record: ISO times without zero microseconds, `true`/`false`, empty cells for null, csv's
minimal quoting, JSON string escapes (tests/metering/test_fast_export.py compares the two on awkward
records). Python writes each page column by column (metering/export_lines.py): from SQLite's
raw values, where SQL functions are slow; from PostgreSQL, the text of the values that differ on
every record, written by the database (SQL expressions below), while the columns that repeat
(user, model, prices…) come as one ROW(…) text per group, written once per distinct value by
Python: that takes about a third off PostgreSQL's work, which bounds the speed there. Pages are
keyset pages in (occurred_at, id) order, each one statement on its own connection checkout, so
memory and transactions stay short however large the export.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any, Literal, NamedTuple, cast

import orjson
from sqlalchemy import BigInteger, Boolean, Integer, String, Table, Uuid
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.db.types import UTCDateTime
from switchboard.metering.export_lines import Column, Kind, page_function
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.schemas import UsageRecordOut
from switchboard.metering.usage_queries import UsageFilter

Format = Literal["csv", "ndjson"]
COLUMNS: tuple[str, ...] = tuple(UsageRecordOut.model_fields)
_TABLE = cast(Table, UsageRecordRow.__table__)
# How each column is handed over (speed only, never the bytes): the values that differ on (nearly)
# every record one by one (SQLite) or written by PostgreSQL, the rest in groups of columns whose
# values go together (a user's room, agent and credential; a model's provider, prices and statuses),
# each group one json_array (SQLite) or ROW(…) text (PostgreSQL), its text remembered in Python.
_DISTINCT = frozenset({"id", "request_id", "occurred_at", "session_id", "idempotency_key"})
_WHO = frozenset({"economy_id", "user_id", "room_id", "agent_id", "credential_id", "credential_scope"})
_NUMBERS = frozenset({"prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost"})
_NUMBERS |= {"latency_ms", "ttft_ms"}
# JSON functions are built into SQLite from 3.38 (before, only when compiled in).
_JSON_ARRAY = sqlite3.sqlite_version_info >= (3, 38, 0)


# Columns holding a JSON text, written into a JSON line as they are (each read on its own).
_JSON = frozenset({"prices"})


def _reading(name: str, postgres: bool) -> str:
    if name in _JSON:
        return "single"
    if name in _DISTINCT or (postgres and name in _NUMBERS):
        return "distinct"
    if name in _NUMBERS or not (_JSON_ARRAY or postgres):
        return "single"
    return "who" if name in _WHO else "what"


def _columns(fmt: Format, postgres: bool) -> list[Column]:
    """What each page's query reads. PostgreSQL writes the text of the values that differ on every
    record itself, each run of them one value (a "line" column); Python remembers the groups' text."""
    columns = [
        Column(name, _kind(name), bool(_TABLE.c[name].nullable), _reading(name, postgres)) for name in COLUMNS
    ]
    if not postgres:
        return columns
    merged: list[Column] = []
    for column in columns:
        if column.reading != "distinct":
            merged.append(column)
            continue
        cell = _cell(_Postgres, column.name, fmt)
        text = cell if fmt == "csv" else f"'\"{column.name}\":'||{cell}"
        if merged and merged[-1].kind == "line":
            text = f"{merged.pop().sql}||','||{text}"
        merged.append(Column(f"part{len(merged)}", "line", False, "distinct", text))
    return merged


def _kind(name: str) -> Kind:
    if name in _JSON:
        return "json"
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
        # '.000000' can only be the fraction (the rest has no dot): isoformat() leaves it out.
        utc = f"({c} AT TIME ZONE 'UTC')"
        return f"replace(to_char({utc},'YYYY-MM-DD\"T\"HH24:MI:SS.US'),'.000000','')||'{zone}'"

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


class _Page(NamedTuple):
    data: Any  # the rows as the driver returned them
    after: tuple[object, object] | None  # the last record's (occurred_at, id) when the page was full


class _Pages:
    """The page query of one filter, with parameters already in the driver's form."""

    def __init__(self, dialect: Dialect, usage: UsageFilter, fmt: Format, page_size: int) -> None:
        self._postgres = dialect.name == "postgresql"
        self._fmt = fmt
        self._size = page_size
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
        plan = page_function(_columns(fmt, self._postgres), fmt, "postgresql" if self._postgres else "sqlite")
        self._select = ", ".join(plan.select)
        self._format = plan.page
        if not self._postgres:
            self._key_at = (plan.select.index('"occurred_at"'), plan.select.index('"id"'))

    @staticmethod
    def _bind(dialect: Dialect, column: str, value: object) -> object:
        processor = _TABLE.c[column].type.dialect_impl(dialect).bind_processor(dialect)
        return processor(value) if processor is not None else value

    def query(self, after: tuple[object, object] | None) -> tuple[str, list[object]]:
        """`after`: the last page's (occurred_at, id) in the driver's form."""
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
        values.append(self._size)
        condition = " AND ".join(where) or "TRUE"
        # Only this module's own SQL and column names go into the text; every value is a parameter.
        sql = (
            f"SELECT {self._select} FROM usage_records WHERE {condition} "  # noqa: S608
            f"ORDER BY occurred_at, id LIMIT {self._mark(len(values))}"
        )
        return sql, values

    def _mark(self, position: int) -> str:
        return f"${position}" if self._postgres else "?"

    async def read(self, engine: AsyncEngine, after: tuple[object, object] | None) -> _Page:
        """One statement on a connection of its own (autocommit: no transaction outlives the page)."""
        sql, values = self.query(after)
        async with engine.connect() as connection:
            driver: Any = (await connection.get_raw_connection()).driver_connection
            if self._postgres:
                rows = await driver.fetch(sql, *values)
                first = rows[-1][0] if len(rows) == self._size else None  # id, request_id, occurred_at
                return _Page(rows, None if first is None else _last_key(first, self._fmt))
            cursor = await driver.execute(sql, values)  # aiosqlite: runs on its own thread
            try:
                rows = await cursor.fetchall()
            finally:
                await cursor.close()
        if len(rows) < self._size:
            return _Page(rows, None)
        when, record_id = self._key_at
        return _Page(rows, (rows[-1][when], rows[-1][record_id]))

    def format(self, page: _Page) -> bytes:
        return self._format(page.data)


# A CSV line's id and time: the id (never quoted), then request_id (quoted by csv's rules, or not).
_CSV_KEY = re.compile('([0-9a-f-]{36}),(?:"(?:[^"]|"")*"|[^,"\n]*),([^,]+)')


def _last_key(line: str, fmt: Format) -> tuple[object, object]:
    """(occurred_at, id) of a page's last record, read back from the start of its line (PostgreSQL
    writes id, request_id and occurred_at as one part): no key columns to fetch for each record."""
    if fmt == "ndjson":
        record = orjson.loads(f"{{{line}}}")
        when, record_id = record["occurred_at"], record["id"]
    else:
        match = _CSV_KEY.match(line)
        if match is None:
            raise ValueError("an export line does not start with id, request_id, occurred_at")
        record_id, when = match.group(1), match.group(2)
    return datetime.fromisoformat(when), uuid.UUID(record_id)


async def fast_chunks(
    sessionmaker: async_sessionmaker[AsyncSession], usage: UsageFilter, fmt: Format, page_size: int
) -> AsyncIterator[bytes]:
    """The export's bytes, one chunk per page of `page_size` records.

    The next page is read while this one is formatted and sent: PostgreSQL works while Python
    formats. At most two pages are in memory.
    """
    engine = sessionmaker.kw.get("bind")
    if not isinstance(engine, AsyncEngine):
        raise TypeError("the export needs a sessionmaker bound to an AsyncEngine")
    pages = _Pages(engine.dialect, usage, fmt, page_size)
    if fmt == "csv":
        yield (",".join(COLUMNS) + "\n").encode()
    reading: asyncio.Future[_Page] | None = asyncio.ensure_future(pages.read(engine, None))
    try:
        while reading is not None:
            page = await reading
            reading = None
            if page.after is not None:
                reading = asyncio.ensure_future(pages.read(engine, page.after))
            if page.data:
                yield pages.format(page)
    finally:
        if reading is not None:  # the reader went away (a client that disconnected)
            reading.cancel()
