"""The cache's one read on a hit, at the least CPU each database allows.

Through the engine the read cost a hit more than the relayed call it replaces (a thread hop through
aiosqlite, a pool checkout; `bench/run --cache-delta`). On SQLite it runs on the event loop's thread,
on a connection of its own that never waits (WAL readers take no lock a writer holds; `busy_timeout=0`,
and a busy file falls back to the engine). On PostgreSQL the reads of concurrent hits are batched, as
the usage writer batches records: one query is in flight at a time, on a kept asyncpg connection
(db/kept_connections.py), and the hits that arrive meanwhile share the next one. A round trip each,
concurrent hits took connections from the pool (a checkout costs more than the query).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Engine, Table, select
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.cache.models import CachedAnswerRow
from switchboard.db.engine import make_sync_sqlite_engine
from switchboard.db.write_transaction import WriteTransactions

_TABLE = cast(Table, CachedAnswerRow.__table__)
_SQLITE = "SELECT sealed FROM response_cache WHERE key = ? AND expires_at > ?"
_POSTGRES = "SELECT key, sealed FROM response_cache WHERE key = ANY($1::bytea[]) AND expires_at > $2"
_SQLITE_TEXT_LENGTH = 26  # db/types.py: how SQLite stores a UTC time, which sorts as text


class _Busy(Exception):
    """The SQLite file is busy this instant."""


class SealedReader:
    """`read(key, now)`: the sealed answer stored under `key`, unless it expired by `now`."""

    def __init__(
        self, engine: AsyncEngine, transactions: WriteTransactions | None, clock: Callable[[], datetime]
    ) -> None:
        self._engine = engine
        self._clock = clock
        # PostgreSQL: the keys waiting for the next batch, and whether a batch is under way.
        self._waiting: dict[bytes, list[asyncio.Future[bytes | None]]] = {}
        self._batching = False
        self._drainer: asyncio.Task[None] | None = None
        self._transactions = transactions
        self._sqlite = engine.dialect.name == "sqlite"
        self._sync: Engine | None = None
        self._driver: sqlite3.Connection | None = None
        self._keep: Any = None  # the pool's connection under `_driver`, closed with the reader

    async def read(self, key: bytes, now: datetime) -> bytes | None:
        if self._sqlite:
            try:
                return self._sqlite_read(key, now)
            except _Busy:
                pass  # read through the engine, which waits for the file
        elif self._transactions is not None:
            return await self._batched(key)
        query = select(_TABLE.c.sealed).where(_TABLE.c.key == key, _TABLE.c.expires_at > now)
        async with self._engine.connect() as conn:
            return (await conn.execute(query)).scalar()

    async def _batched(self, key: bytes) -> bytes | None:
        found: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(found)
        if not self._batching:
            self._batching = True
            self._drainer = asyncio.get_running_loop().create_task(self._drain())  # kept: not collected
        return await found

    async def _drain(self) -> None:
        assert self._transactions is not None
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, {}
                try:
                    async with self._transactions.driver_connection() as driver:
                        rows = await driver.fetch(_POSTGRES, list(batch), self._clock())
                except BaseException as error:
                    for waiters in batch.values():
                        for waiter in waiters:
                            if not waiter.done():
                                waiter.set_exception(error)
                    if not isinstance(error, Exception):
                        raise
                    continue
                sealed = {bytes(row[0]): bytes(row[1]) for row in rows}
                for key, waiters in batch.items():
                    for waiter in waiters:
                        if not waiter.done():  # a caller cancelled meanwhile
                            waiter.set_result(sealed.get(key))
        finally:
            self._batching = False

    def _sqlite_read(self, key: bytes, now: datetime) -> bytes | None:
        """The answer or None; _Busy when the file is busy this instant."""
        driver = self._driver or self._open()
        moment = now.astimezone(UTC).isoformat(" ", "microseconds")[:_SQLITE_TEXT_LENGTH]
        try:
            row = driver.execute(_SQLITE, (key, moment)).fetchone()
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise _Busy from None
            self.close()
            raise
        return bytes(row[0]) if row is not None else None

    def _open(self) -> sqlite3.Connection:
        self._sync = make_sync_sqlite_engine(self._engine.url.render_as_string(hide_password=False))
        self._keep = self._sync.raw_connection()
        driver = cast(sqlite3.Connection, self._keep.driver_connection)
        driver.execute("PRAGMA busy_timeout=0")  # on the event loop's thread: never wait for the file
        self._driver = driver
        return driver

    def close(self) -> None:
        keep, self._keep, self._driver = self._keep, None, None
        if keep is not None:
            keep.close()
        if self._sync is not None:
            self._sync.dispose()
            self._sync = None
