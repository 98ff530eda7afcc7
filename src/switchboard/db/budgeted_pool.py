"""The PostgreSQL engine's pool: a fixed budget of connections, and what waiting for one costs.

A QueuePool without overflow, which also tells a watcher (observability: `/metrics`) each time a
checkout found every connection of the budget taken and how long it waited for one. A checkout that
finds a connection free pays one comparison more than QueuePool's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry

Watcher = Callable[[float], None]  # called with the seconds one checkout waited


class BudgetedPool(AsyncAdaptedQueuePool):
    watcher: Watcher | None = None

    def budget(self) -> int:
        """Connections this pool opens at most."""
        return self.size() + max(self._max_overflow, 0)

    def _do_get(self) -> ConnectionPoolEntry:
        watcher = self.watcher
        if watcher is None or self.checkedout() < self.budget():
            return super()._do_get()
        started = time.perf_counter()
        try:
            return super()._do_get()
        finally:
            watcher(time.perf_counter() - started)

    def recreate(self) -> BudgetedPool:
        # engine.dispose() replaces the pool: the new one reports to the same watcher.
        pool: Any = super().recreate()
        pool.watcher = self.watcher
        return pool  # type: ignore[no-any-return]
