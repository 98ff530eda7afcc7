"""SQLite: checkpoints of the write-ahead log for a connection that commits on the event loop's thread.

SQLite checkpoints in the connection whose commit takes the log past 1000 pages, and a checkpoint
syncs the files: milliseconds, on whatever thread committed. The ledger's connection
(db/write_transaction.py) commits on the event loop's thread, so it never checkpoints itself
(`wal_autocheckpoint=0`, as the usage writer's own inline connection in db/batch_insert.py). Instead,
every `CHECKPOINT_EVERY` of its commits, one checkpoint runs in a thread of its own while the ledger's
transactions wait their turn: they would otherwise keep adding to the log being copied, and it could
never start over.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import cast

from sqlalchemy import Engine
from sqlalchemy.pool import PoolProxiedConnection

from switchboard.db.batch_insert import CHECKPOINT_EVERY

log = logging.getLogger("switchboard.db")


class LoopCheckpoints:
    def __init__(self, engine: Engine, turn: asyncio.Lock, every: int = CHECKPOINT_EVERY) -> None:
        self._engine = engine
        self._turn = turn  # the ledger's inline transactions take turns with this lock
        self._every = every
        self._commits = 0
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="wal-checkpoint")
        self._connection: PoolProxiedConnection | None = None  # the thread's
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self.done = 0  # checkpoints run

    def committed(self) -> None:
        """A transaction committed on the loop's thread; every `every`, a checkpoint is started."""
        self._commits += 1
        if self._commits >= self._every and self._task is None and not self._closed:
            self._commits = 0
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            async with self._turn:
                await asyncio.get_running_loop().run_in_executor(self._thread, self._checkpoint)
        except Exception:
            # The next one tries again; meanwhile the log grows, and other connections checkpoint it.
            log.warning("write-ahead log checkpoint failed", exc_info=True)
        finally:
            self._task = None

    async def finished(self) -> None:
        """Returns once the checkpoint running or waiting its turn, if any, is over."""
        task = self._task
        if task is not None:
            await asyncio.shield(task)

    def _checkpoint(self) -> None:
        if self._connection is None:
            self._connection = self._engine.raw_connection()
        driver = cast(sqlite3.Connection, self._connection.driver_connection)
        # PASSIVE: it never waits for a reader or for another process's writer.
        driver.execute("PRAGMA wal_checkpoint(PASSIVE)").close()
        self.done += 1

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._thread.submit(self._close_connection)
        self._thread.shutdown(wait=True)
