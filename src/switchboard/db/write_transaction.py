"""Short write transactions at the lowest cost the database allows: the ledger's (limits, settlement).

On SQLite the transaction runs right on the event loop's thread, on a connection of its own that
never waits for the write lock (`busy_timeout=0`): a few small statements cost tens of microseconds
there, against a thread hop each through aiosqlite. When another connection holds the lock, or
on PostgreSQL, it is an ordinary `AsyncEngine.begin()`.

The body of an inline transaction must not wait on anything (it holds SQLite's one write lock):
`InlineConnection.execute` runs the statement at once and its awaits never suspend.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterable
from types import TracebackType
from typing import Any, cast

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from switchboard.db.driver_statements import DriverStatements
from switchboard.db.engine import make_sync_sqlite_engine
from switchboard.db.kept_connections import KeptConnections, kept_share
from switchboard.db.wal_checkpoints import LoopCheckpoints

# Pauses between attempts at SQLite's write lock before waiting for it in a thread (aiosqlite).
INLINE_RETRY_PAUSES = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016)


class InlineConnection:
    """The part of `AsyncConnection` the ledger uses, over a blocking connection.

    Statements marked `driver_ready` go straight to the sqlite3 connection (db/driver_statements.py);
    any other through SQLAlchemy, on the same connection and transaction.
    """

    def __init__(
        self, connection: Connection, driver: sqlite3.Connection, statements: DriverStatements
    ) -> None:
        self._connection = connection
        self._driver = driver  # reached through SQLAlchemy's pool proxies, it costs a few calls each time
        self._statements = statements

    @property
    def dialect(self) -> Dialect:
        return self._connection.dialect

    @property
    def driver(self) -> sqlite3.Connection:
        """The sqlite3 connection itself, inside this transaction."""
        return self._driver

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        prepared = self._statements.get(statement)
        if prepared is None:
            return self._connection.execute(statement, parameters)
        return prepared.run(self._driver, parameters)

    async def scalar(self, statement: Any, parameters: Any = None) -> Any:
        return (await self.execute(statement, parameters)).scalar()


LedgerConnection = AsyncConnection | InlineConnection


def _driver(connection: Connection) -> sqlite3.Connection:
    return cast(sqlite3.Connection, connection.connection.driver_connection)


class _NothingToLock:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *_: object) -> None:
        return None


_NOTHING_TO_LOCK = _NothingToLock()


class _Turn:
    """A key's lock, and how many callers hold or wait for it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class _RowTurns:
    """`rows_locked_here`: each key's lock in sorted order, the keys forgotten once nobody holds or
    waits for them. A class rather than a generator over an exit stack, which made a turn about three
    times dearer: on PostgreSQL every settlement of calls admitted on an allowance takes one."""

    __slots__ = ("_keys", "_turns")

    def __init__(self, turns: dict[object, _Turn], keys: Iterable[object]) -> None:
        self._turns = turns
        self._keys: list[object] = sorted(set(keys))  # type: ignore[type-var]

    async def __aenter__(self) -> None:
        turns = self._turns
        for index, key in enumerate(self._keys):
            turn = turns.get(key)
            if turn is None:
                turn = turns[key] = _Turn()
            turn.users += 1
            try:
                await turn.lock.acquire()
            except BaseException:  # cancelled while waiting: the turns taken so far go back
                self._leave(index + 1, index)
                raise

    async def __aexit__(self, *_: object) -> None:
        self._leave(len(self._keys), len(self._keys))

    def _leave(self, counted: int, held: int) -> None:
        """Releases the first `held` keys' locks and uncounts the first `counted` keys."""
        turns = self._turns
        for index, key in enumerate(self._keys[:counted]):
            turn = turns[key]
            if index < held:
                turn.lock.release()
            turn.users -= 1
            if not turn.users:
                del turns[key]


class _InlineTransaction:
    """`begin()` on SQLite: the inline connection inside BEGIN IMMEDIATE, committed at the end (rolled
    back on an error), else an ordinary transaction. A class rather than a generator-based context
    manager: every reservation and settlement enters one."""

    __slots__ = ("_driver", "_fallback", "_owner")

    def __init__(self, owner: WriteTransactions) -> None:
        self._owner = owner
        self._driver: sqlite3.Connection | None = None
        self._fallback: contextlib.AbstractAsyncContextManager[AsyncConnection] | None = None

    async def __aenter__(self) -> LedgerConnection:
        owner = self._owner
        # One inline transaction at a time in this process: its connection is shared.
        await owner._inline_lock.acquire()
        try:
            connection = await owner._inline_begin()
        except BaseException:
            owner._inline_lock.release()
            raise
        if connection is None:
            owner._inline_lock.release()
            self._fallback = owner._engine.begin()
            return await self._fallback.__aenter__()
        self._driver = owner._inline_driver()
        return InlineConnection(connection, self._driver, owner._statements)

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        if self._fallback is not None:
            return await self._fallback.__aexit__(kind, error, trace)
        owner, driver = self._owner, self._driver
        assert driver is not None
        try:
            if kind is not None:
                try:
                    driver.execute("ROLLBACK")
                except Exception:
                    owner._drop_inline()  # closing it rolls the transaction back
                return None
            try:
                driver.execute("COMMIT")
            except BaseException:
                owner._drop_inline()
                raise
            owner._committed_inline()
            return None
        finally:
            owner._inline_lock.release()


class WriteTransactions:
    """`app.state.write_transactions`: `async with transactions.begin() as conn: ...`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self.dialect_name: str = engine.dialect.name
        self._sync: Engine | None = None
        self._inline: Connection | None = None
        self._inline_sqlite: sqlite3.Connection | None = None  # the driver's connection under `_inline`
        self._inline_lock = asyncio.Lock()
        # Per key, its lock and how many callers hold or wait for it: gone when none do (keys come and
        # go: limits, and allowances, which are named anew each time a process makes one).
        self._row_locks: dict[object, _Turn] = {}
        self._checkpoints: LoopCheckpoints | None = None
        if engine.dialect.name == "sqlite":
            self._sync = make_sync_sqlite_engine(engine.url.render_as_string(hide_password=False))
            self._statements = DriverStatements(self._sync.dialect)
            self._checkpoints = LoopCheckpoints(self._sync, self._inline_lock)
        self._kept = KeptConnections(engine, keep=kept_share(engine))

    def _inline_connection(self) -> Connection:
        if self._inline is None:
            assert self._sync is not None
            connection = self._sync.connect().execution_options(isolation_level="AUTOCOMMIT")
            connection.exec_driver_sql("PRAGMA busy_timeout=0")
            connection.exec_driver_sql("PRAGMA wal_autocheckpoint=0")  # db/wal_checkpoints.py does it
            self._inline = connection
            self._inline_sqlite = _driver(connection)
        return self._inline

    def _committed_inline(self) -> None:
        assert self._checkpoints is not None
        self._checkpoints.committed()

    def _inline_driver(self) -> sqlite3.Connection:
        assert self._inline_sqlite is not None
        return self._inline_sqlite

    def _drop_inline(self) -> None:
        connection, self._inline = self._inline, None
        self._inline_sqlite = None
        if connection is not None:
            connection.invalidate()
            connection.close()

    def _try_begin(self) -> Connection | None:
        """The inline connection inside BEGIN IMMEDIATE, or None while another connection writes."""
        connection = self._inline_connection()
        try:
            self._inline_driver().execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                self._drop_inline()
                raise
            return None
        return connection

    async def _inline_begin(self) -> Connection | None:
        # Another connection's transaction is short (a usage batch, another replica's reservation):
        # a few brief yields to the loop wait it out far sooner than SQLite's busy handler would.
        for pause in INLINE_RETRY_PAUSES:
            connection = self._try_begin()
            if connection is not None:
                return connection
            await asyncio.sleep(pause)
        return self._try_begin()

    def begin(self) -> contextlib.AbstractAsyncContextManager[LedgerConnection]:
        if self._sync is not None:
            return _InlineTransaction(self)
        return self._engine.begin()

    def driver_connection(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """PostgreSQL: a driver connection (asyncpg) of this process's own, outside any transaction:
        each statement commits by itself, with no BEGIN or COMMIT round trip around it."""
        return self._kept.lease()

    def rows_locked_here(self, keys: Iterable[object]) -> contextlib.AbstractAsyncContextManager[None]:
        """This process's turn at rows the transaction will lock (in `keys`' sorted order).

        Callers of one process queue here rather than in the database: on PostgreSQL each waiter
        there would hold a connection of its own for as long as the row lock is held before it.
        SQLite has one write lock for the whole file, and this process's inline transactions already
        take turns for it (`begin`): nothing to add there.
        """
        if self._sync is not None:
            return _NOTHING_TO_LOCK
        return _RowTurns(self._row_locks, keys)

    async def aclose(self) -> None:
        await self._kept.close()
        if self._checkpoints is not None:
            await self._checkpoints.finished()
        self.close()

    def close(self) -> None:
        self._drop_inline()
        if self._checkpoints is not None:
            self._checkpoints.close()
        if self._sync is not None:
            self._sync.dispose()
