"""A database session opened only if the work turns out to need one."""

from __future__ import annotations

from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker


class SessionOnDemand:
    """Call it for the session; the first call opens it, `async with` closes it if it was opened.

    A model call is usually answered from caches (credentials, economies, verified tokens) and then
    needs no session at all; opening and closing an unused AsyncSession still cost it about 20 µs.
    """

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], engine: AsyncEngine) -> None:
        self._sessionmaker = sessionmaker
        self._session: AsyncSession | None = None
        self.engine: Engine = engine.sync_engine  # what per-database caches are keyed by

    def __call__(self) -> AsyncSession:
        if self._session is None:
            self._session = self._sessionmaker()
        return self._session

    async def __aenter__(self) -> SessionOnDemand:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()
