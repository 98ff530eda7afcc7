"""The database pool's figures on `/metrics`: its budget, connections in use (sampled), and waits.

In use is sampled once a second rather than counted at each checkout and return: nothing is added
to the hot path, and a sample cannot drift the way an increment missed on an invalidated connection
would. Waits are counted by the pool itself (db/budgeted_pool.py), only when a checkout waits.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from switchboard.observability.metrics import Metrics

SAMPLE_SECONDS = 1.0


class PoolGauges:
    def __init__(self, engine: Any, metrics: Metrics) -> None:
        self._engine = engine
        self._metrics = metrics
        self._task: asyncio.Task[None] | None = None

    def _pool(self) -> Any:
        pool = self._engine.pool  # read each time: engine.dispose() replaces it
        return pool if hasattr(pool, "budget") else None

    def start(self) -> None:
        pool = self._pool()
        if pool is None:  # SQLite: a local file, no server's connections to budget
            return
        pool.watcher = self._metrics.pool_waited
        self._metrics.db_pool_size.set(pool.budget())
        self._task = asyncio.get_running_loop().create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            pool = self._pool()
            if pool is not None:
                self._metrics.db_connections_in_use.set(pool.checkedout())
            await asyncio.sleep(SAMPLE_SECONDS)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
