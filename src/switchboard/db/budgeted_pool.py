"""The PostgreSQL engine's pool: a fixed budget of connections, and what waiting for one costs.

A QueuePool without overflow, which also tells a watcher (observability: `/metrics`) each time a
checkout found every connection of the budget taken and how long it waited for one, and first asks
whoever keeps connections idle outside the pool (db/kept_connections.py) to give them back. A checkout
that finds a connection free pays one comparison more than QueuePool's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry

Watcher = Callable[[float], None]  # called with the seconds one checkout waited


class BudgetedPool(AsyncAdaptedQueuePool):
    # Logs under SQLAlchemy's own namespace (quiet unless asked), not the gateway's INFO logger.
    _sqla_logger_namespace = "sqlalchemy.pool.impl.BudgetedPool"
    watcher: Watcher | None = None
    # Called (synchronously, on the event loop's thread) when a checkout is about to wait: each
    # schedules the return of the connections it keeps idle.
    on_short: tuple[Callable[[], None], ...] = ()

    def budget(self) -> int:
        """Connections this pool opens at most."""
        return self.size() + max(self._max_overflow, 0)

    def _do_get(self) -> ConnectionPoolEntry:
        if self.checkedout() < self.budget():
            return super()._do_get()
        for give_back in self.on_short:
            give_back()
        started = time.perf_counter()
        try:
            return super()._do_get()
        finally:
            if self.watcher is not None:
                self.watcher(time.perf_counter() - started)

    def recreate(self) -> BudgetedPool:
        # engine.dispose() replaces the pool: the new one reports to the same watcher and keepers.
        pool: Any = super().recreate()
        pool.watcher, pool.on_short = self.watcher, self.on_short
        return pool  # type: ignore[no-any-return]
