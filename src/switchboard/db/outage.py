"""Whether the database answers: a heartbeat on PostgreSQL, and failures noticed by anyone who hit one.

While it is down, model calls are refused with 503 before any provider is called (a call that could
not be metered must not be made), and errors that come from the lost connection are one log line each
outage instead of a traceback per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.errors import ServiceUnavailable

log = logging.getLogger("switchboard.db")

HEARTBEAT_SECONDS = 1.0
PROBE_TIMEOUT_SECONDS = 2.0
# A probe that only ran out of time may have met a loaded machine (every process of a busy host late
# at once): it takes this many in a row. A refused or reset connection is an outage at once, and so
# is any failure a request meets on its own statements (`lost_database`).
TIMEOUTS_FOR_OUTAGE = 3
RETRY_AFTER_SECONDS = 2


def is_connection_error(error: BaseException) -> bool:
    """A failure of the database connection itself (refused, reset, timed out), not of a statement."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    if isinstance(error, OperationalError | InterfaceError | ConnectionError | TimeoutError):
        return True
    if isinstance(error, OSError):
        return True
    # asyncpg's own, when raised outside SQLAlchemy (the usage writer's kept connection).
    module = type(error).__module__
    name = type(error).__name__
    return module.startswith("asyncpg") and (
        "Connection" in name or name in ("InterfaceError", "CannotConnectNowError", "AdminShutdownError")
    )


def unavailable() -> ServiceUnavailable:
    return ServiceUnavailable(
        "the gateway's database is unreachable; nothing was sent to a provider, retry shortly",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


class DatabaseOutage:
    """`app.state.db_outage`. `down` is what the hot path reads: one attribute, no I/O."""

    def __init__(self, engine: AsyncEngine, enabled: bool) -> None:
        self._engine = engine
        self.enabled = enabled
        self.down = False
        self._since = 0.0
        self._timeouts = 0  # probes in a row that ran out of time
        self._task: asyncio.Task[None] | None = None
        self._on_recovery: list[Callable[[], Awaitable[None]]] = []

    def on_recovery(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Runs before `down` clears (the usage writer replays its spool there)."""
        self._on_recovery.append(callback)

    def start(self) -> None:
        if not self.enabled:
            return
        self._task = asyncio.create_task(self._run(), name="db-heartbeat")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def note_failure(self, error: BaseException) -> None:
        if self.enabled and not self.down:
            self.down, self._since = True, time.monotonic()
            log.warning(
                "database unreachable (%s); model calls answer 503 until it returns", type(error).__name__
            )

    def check(self) -> None:
        """Raises the 503 a model call gets while the database is down."""
        if self.down:
            raise unavailable()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            try:
                async with asyncio.timeout(PROBE_TIMEOUT_SECONDS), self._engine.connect() as conn:
                    await conn.execute(text("SELECT 1"))
            except Exception as error:  # a refused or broken connection means: not reachable now ...
                if isinstance(error, TimeoutError):
                    self._timeouts += 1
                    if self._timeouts < TIMEOUTS_FOR_OUTAGE or self._budget_in_use():
                        continue
                self.note_failure(error)
                continue
            self._timeouts = 0
            if self.down:
                await self._recover()

    def _budget_in_use(self) -> bool:
        """Every connection of the process's budget (db/budgeted_pool.py) in use: a probe that timed
        out waiting its turn for one met load, not an outage. Were the server gone, the statements on
        those connections would fail and say so (`lost_database`)."""
        pool: Any = self._engine.pool
        budget = getattr(pool, "budget", None)
        return budget is not None and pool.checkedout() >= budget()

    async def _recover(self) -> None:
        try:
            for callback in self._on_recovery:
                await callback()
        except Exception as error:
            log.warning("database back, but catching up failed (%s); retrying", type(error).__name__)
            return
        self.down = False
        log.warning("database reachable again after %.1f s", time.monotonic() - self._since)


def lost_database(scope: Mapping[str, Any], error: BaseException | None) -> ServiceUnavailable | None:
    """The 503 for a request that failed because the database went away (noted as an outage, logged
    once), or None when the error is something else."""
    outage = getattr(getattr(scope.get("app"), "state", None), "db_outage", None)
    if not isinstance(outage, DatabaseOutage) or not outage.enabled or error is None:
        return None
    if not is_connection_error(error):
        return None
    outage.note_failure(error)
    return unavailable()
