"""Idempotent batch inserts into one table, one round trip per batch, below SQLAlchemy's ORM and compiler.

For a stream of small batches (the usage writer at low concurrency) the fixed cost per batch matters
more than anything per row: a session, statement compilation and one round trip per BEGIN, INSERT and
COMMIT cost several times what the insert does. Here the SQL is written once, rows arrive as tuples in
the order of `columns`, and values pass through the same bind processors SQLAlchemy would apply, so
what is stored reads back exactly as if Core had written it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, cast

from sqlalchemy import Engine, Table
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import PoolProxiedConnection

from switchboard.db.engine import make_sync_sqlite_engine
from switchboard.db.kept_connections import KeptConnections

Row = Sequence[object]
# SQLite: batches up to this size commit on the caller's thread (see SqliteBatchInsert).
INLINE_MAX_ROWS = 8
# After this many commits on the caller's thread, a batch goes through the thread (which checkpoints).
# A one-record commit adds about seven pages to the WAL (the record, its indexes, its three rollup
# rows) and more as its tables grow; SQLite checkpoints past 1000.
CHECKPOINT_EVERY = 100
# PostgreSQL: the connection kept for inserts is closed after this long without a batch.
IDLE_SECONDS = 10.0
_Processor = Callable[[Any], Any]
# SQLite: run inside the insert's transaction, before its commit, with the rows given and the number
# the insert stored (fewer when some key existed); raising rolls the whole transaction back.
AfterInsert = Callable[[sqlite3.Connection, Sequence[Row], int], None]


class PreparedInsert(Protocol):
    """PostgreSQL: a statement that replaces the plain INSERT, with its arguments for a batch."""

    sql: str

    def parameters(self, rows: Sequence[Row]) -> list[Row]: ...


class BatchInsert(Protocol):
    async def insert(self, rows: Sequence[Row]) -> None:
        """Insert every row in one transaction; rows whose key exists already are skipped."""

    async def close(self) -> None: ...


def batch_insert(
    engine: AsyncEngine,
    table: Table,
    columns: Sequence[str],
    *,
    sqlite_after: AfterInsert | None = None,
    postgres_statement: PreparedInsert | None = None,
) -> BatchInsert:
    """On SQLite, through connections of its own to the engine's database file."""
    if engine.dialect.name == "sqlite":
        url = engine.url.render_as_string(hide_password=False)
        return SqliteBatchInsert(url, table, columns, after=sqlite_after)
    if engine.dialect.name == "postgresql":
        return PostgresBatchInsert(engine, table, columns, statement=postgres_statement)
    raise ValueError(f"no batch insert for {engine.dialect.name}")


class _Statement:
    """The INSERT for one dialect and the conversions its driver needs, prepared once."""

    def __init__(
        self, dialect: Dialect, table: Table, columns: Sequence[str], placeholders: list[str]
    ) -> None:
        unknown = set(columns) - set(table.columns.keys())
        if unknown:
            raise ValueError(f"{table.name} has no column {sorted(unknown)}")
        preparer = dialect.identifier_preparer
        into = f"{preparer.format_table(table)} ({', '.join(map(preparer.quote, columns))})"
        values = ", ".join(placeholders)
        # Only the table's own names, quoted, go into the text; every value is a parameter.
        self.sql = f"INSERT INTO {into} VALUES ({values}) ON CONFLICT DO NOTHING"  # noqa: S608
        self._processors: list[tuple[int, _Processor]] = []
        for index, name in enumerate(columns):
            column_type = table.columns[name].type
            processor = column_type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:  # most columns (strings, integers) have none: the loop stays short
                self._processors.append((index, processor))

    def parameters(self, rows: Sequence[Row]) -> list[Row]:
        if not self._processors:
            return list(rows)
        converted: list[Row] = []
        for row in rows:
            values = list(row)
            for index, processor in self._processors:
                values[index] = processor(values[index])
            converted.append(values)
        return converted


class SqliteBatchInsert:
    """Small batches commit right here; the others, and any that would wait for the write lock, in a thread.

    A commit of a few rows is ~50 us of SQLite work (WAL, `synchronous=NORMAL`: no fsync), less than
    the two thread switches of a hop to another thread (aiosqlite would take three: BEGIN, INSERT,
    COMMIT). What can take long never happens on the caller's thread: waiting for another connection's
    write lock (the caller's connection has a busy timeout of 0; the batch goes to the thread, which
    waits) and checkpoints, which sync the files (the caller's connection never checkpoints; every
    `CHECKPOINT_EVERY` commits, one batch goes through the thread, whose connection does).
    """

    def __init__(
        self, url: str, table: Table, columns: Sequence[str], after: AfterInsert | None = None
    ) -> None:
        self._engine: Engine = make_sync_sqlite_engine(url)
        self._after = after
        self._statement = _Statement(self._engine.dialect, table, columns, ["?"] * len(columns))
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="batch-insert")
        self._connection: PoolProxiedConnection | None = None  # the thread's
        self._inline: PoolProxiedConnection | None = None  # the caller's (the event loop's thread)
        self._inline_commits = 0

    async def insert(self, rows: Sequence[Row]) -> None:
        inline = len(rows) <= INLINE_MAX_ROWS and self._inline_commits < CHECKPOINT_EVERY
        if inline and self._insert_inline(rows):
            self._inline_commits += 1
            return
        # The thread's connection checkpoints as SQLite does by default (in the commit that finds the
        # WAL over 1000 pages), and the next write then starts the WAL over.
        self._inline_commits = 0
        await asyncio.get_running_loop().run_in_executor(self._thread, self._insert, rows)

    def _insert_inline(self, rows: Sequence[Row]) -> bool:
        """Insert and commit now, or return False without a change if another connection is writing."""
        parameters = self._statement.parameters(rows)
        connection = self._inline_connection()
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
                return False
            self._drop_inline()
            raise
        try:
            inserted = connection.executemany(self._statement.sql, parameters).rowcount
            if self._after is not None:
                self._after(connection, rows, inserted)
            connection.commit()
        except BaseException:
            self._drop_inline()  # closing it rolls the transaction back
            raise
        return True

    def insert_on(self, connection: sqlite3.Connection, rows: Sequence[Row]) -> None:
        """Insert (and run the after-insert step) inside a transaction the caller holds on its own
        connection to the same file: the ledger's settlement commits records with its other writes."""
        inserted = connection.executemany(self._statement.sql, self._statement.parameters(rows)).rowcount
        if self._after is not None:
            self._after(connection, rows, inserted)

    def _inline_connection(self) -> sqlite3.Connection:
        if self._inline is None:
            self._inline = self._engine.raw_connection()
            connection = cast(sqlite3.Connection, self._inline.driver_connection)
            connection.execute("PRAGMA busy_timeout=0")
            connection.execute("PRAGMA wal_autocheckpoint=0")
        return cast(sqlite3.Connection, self._inline.driver_connection)

    def _drop_inline(self) -> None:
        connection, self._inline = self._inline, None
        if connection is not None:
            connection.invalidate()

    def _thread_connection(self) -> PoolProxiedConnection:
        if self._connection is None:
            self._connection = self._engine.raw_connection()
        return self._connection

    def _insert(self, rows: Sequence[Row]) -> None:
        parameters = self._statement.parameters(rows)
        connection = self._thread_connection()
        try:
            cursor = connection.cursor()
            try:
                # sqlite3 begins the transaction implicitly before the first INSERT.
                cursor.executemany(self._statement.sql, parameters)
                inserted = cursor.rowcount
            finally:
                cursor.close()
            if self._after is not None:
                self._after(cast(sqlite3.Connection, connection.driver_connection), rows, inserted)
            connection.commit()
        except BaseException:
            # Whatever went wrong, the next batch starts on a fresh connection.
            self._connection = None
            connection.invalidate()
            raise

    async def close(self) -> None:
        self._drop_inline()
        await asyncio.get_running_loop().run_in_executor(self._thread, self._release)
        self._thread.shutdown(wait=True)
        self._engine.dispose()

    def _release(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class PostgresBatchInsert:
    """asyncpg's `executemany` (`execute` for one row) on a kept connection (db/kept_connections.py).

    Without a transaction open, asyncpg sends every row's Bind/Execute and a single Sync: one round
    trip, and the server runs it as one implicit transaction, so a batch is all or nothing. Each row
    is its own statement, so no batch size runs into the protocol's 32767-parameter limit.

    The connection is kept between batches (a checkout from the pool costs about what the insert
    does) and closed once no batch came for `idle_seconds`, so that an idle process holds no more
    connections than its pool. One that fails mid-batch is discarded, never returned to the pool.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        table: Table,
        columns: Sequence[str],
        idle_seconds: float = IDLE_SECONDS,
        statement: PreparedInsert | None = None,
    ) -> None:
        placeholders = [f"${index}" for index in range(1, len(columns) + 1)]
        self._statement: PreparedInsert = statement or _Statement(
            engine.dialect, table, columns, placeholders
        )
        self._kept = KeptConnections(engine, keep=1, idle_seconds=idle_seconds, discard_idle=True)

    async def insert(self, rows: Sequence[Row], statement: PreparedInsert | None = None) -> None:
        """`statement`: one that does more in the same round trip (the same rows, more arguments)."""
        statement = statement or self._statement
        parameters = statement.parameters(rows)
        async with self._kept.lease() as driver:
            if len(parameters) == 1:  # executemany's pipelining costs ~10 us more for a single row
                await driver.execute(statement.sql, *parameters[0])
            else:
                await driver.executemany(statement.sql, parameters)

    async def close(self) -> None:
        await self._kept.close()
