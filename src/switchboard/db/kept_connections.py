"""PostgreSQL driver connections kept out of the engine's pool between uses, for the ledger's statements.

A checkout from SQLAlchemy's pool and its return (greenlet hops, a task for the close) cost about as
much of the gateway's CPU as the reservation's own statement. A few connections are kept here instead,
each used by one caller at a time; they are closed once none was used for `idle_seconds`, so that an
idle process holds no more connections than its pool.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from switchboard.errors import SwitchboardError

IDLE_SECONDS = 10.0
KEEP = 8  # at most this many idle; more callers at once check out more, returned to the pool after


def kept_share(engine: AsyncEngine) -> int:
    """How many idle connections to keep out of the engine's pool: a quarter of its budget (at least
    one, at most KEEP). A kept connection is not the pool's to give: kept idle, it must still leave
    the usage writer, the registry's reload and request sessions enough of the budget."""
    budget = getattr(engine.pool, "budget", None)
    return KEEP if budget is None else max(1, min(KEEP, budget() // 4))


class KeptConnections:
    """`discard_idle`: a connection idle for `idle_seconds` is closed at the server rather than
    returned to the engine's pool (which would keep it open): for an engine of its own, as the usage
    writer's batch insert may have, an idle process then holds no connection at all."""

    def __init__(
        self,
        engine: AsyncEngine,
        keep: int = KEEP,
        idle_seconds: float = IDLE_SECONDS,
        discard_idle: bool = False,
    ) -> None:
        self._engine = engine
        self._keep = keep
        self._idle_seconds = idle_seconds
        self._discard_idle = discard_idle
        self._idle: list[tuple[AsyncConnection, Any]] = []
        self._used = False  # a lease since the idle timer last looked
        self._timer: asyncio.TimerHandle | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False  # shut down: a lease that ends now closes its connection
        pool = engine.pool
        if hasattr(pool, "on_short"):  # a budgeted pool (db/budgeted_pool.py) asks for them back
            pool.on_short = (*pool.on_short, self._give_idle_back)

    def lease(self) -> _Lease:
        """`async with kept.lease() as driver:` one asyncpg connection, outside any transaction."""
        return _Lease(self)

    async def _take(self) -> tuple[AsyncConnection, Any]:
        self._used = True
        while self._idle:
            connection, driver = pair = self._idle.pop()
            if not driver.is_closed():
                return pair
            self._later(_discard(connection))  # the server dropped it while it was kept
        connection = await self._engine.connect()
        try:
            driver = (await connection.get_raw_connection()).driver_connection
        except BaseException:
            await _discard(connection)
            raise
        return connection, driver

    def _give_back(self, pair: tuple[AsyncConnection, Any], healthy: bool) -> None:
        connection, driver = pair
        # Inside a transaction begun on the driver: SQLAlchemy's reset on return would not end it.
        healthy = healthy and not driver.is_closed() and not driver.is_in_transaction()
        if healthy and not self._closed and len(self._idle) < self._keep:
            self._idle.append(pair)
            if self._timer is None:  # (it stops once it finds nothing idle: a lease may outlast it)
                self._timer = asyncio.get_running_loop().call_later(self._idle_seconds, self._look)
            return
        # Back to the pool when healthy; a connection that may be broken must not go back there.
        self._later(connection.close() if healthy else _discard(connection))

    def _later(self, closing: Any) -> None:
        task = asyncio.get_running_loop().create_task(closing)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _give_idle_back(self) -> None:
        """Another caller waits for a connection of the budget: the idle ones go back to the pool."""
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            self._later(connection.close())

    def _look(self) -> None:
        self._timer = None
        if self._used:
            self._used = False
            self._timer = asyncio.get_running_loop().call_later(self._idle_seconds, self._look)
            return
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            self._later(_discard(connection) if self._discard_idle else connection.close())

    async def close(self) -> None:
        self._closed = True
        pool = self._engine.pool
        if self._give_idle_back in getattr(pool, "on_short", ()):
            pool.on_short = tuple(f for f in pool.on_short if f != self._give_idle_back)  # type: ignore[attr-defined]
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            with contextlib.suppress(Exception):
                await connection.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


class _Lease:
    __slots__ = ("_kept", "_pair")

    def __init__(self, kept: KeptConnections) -> None:
        self._kept = kept
        self._pair: tuple[AsyncConnection, Any] | None = None

    async def __aenter__(self) -> Any:
        self._pair = await self._kept._take()
        return self._pair[1]

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._pair is not None
        # The gateway's own refusals (a limit said no between two statements) leave the connection as
        # it was; anything else (the driver's failure, a cancel mid-statement) may not have.
        healthy = kind is None or issubclass(kind, SwitchboardError)
        self._kept._give_back(self._pair, healthy)
        self._pair = None


async def _discard(connection: AsyncConnection) -> None:
    with contextlib.suppress(Exception):  # a broken connection may fail to close; it is gone either way
        await connection.invalidate()
        await connection.close()
