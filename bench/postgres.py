"""A fresh PostgreSQL database for one run, dropped afterwards."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from bench.processes import BenchError


async def _admin(dsn: str, statement: str) -> None:
    import asyncpg

    try:
        conn = await asyncpg.connect(dsn, timeout=10)
    except (OSError, asyncpg.PostgresError) as exc:
        raise BenchError(f"PostgreSQL is unreachable at {dsn} ({exc}); start it or use --db sqlite") from exc
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def fresh_database(admin_dsn: str) -> Iterator[str]:
    """Create `switchboard_bench_<pid>` and yield its SQLAlchemy async URL; drop it on the way out."""
    name = f"switchboard_bench_{os.getpid()}"
    asyncio.run(_admin(admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    asyncio.run(_admin(admin_dsn, f'CREATE DATABASE "{name}"'))
    parts = urlsplit(admin_dsn)
    url = urlunsplit(("postgresql+asyncpg", parts.netloc, f"/{name}", parts.query, ""))
    try:
        yield url
    finally:
        asyncio.run(_admin(admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


class PeakConnections:
    """The most backends pg_stat_activity showed on one database, polled on a thread of its own
    (every 50 ms) while the gateway is under load: what a process's connection budget must hold."""

    def __init__(self, admin_dsn: str, database: str) -> None:
        self._admin_dsn = admin_dsn
        self._database = database
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._poll()), daemon=True)

    async def _poll(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(self._admin_dsn, timeout=10)
        try:
            while not self._stop.is_set():
                count = await conn.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", self._database
                )
                self.peak = max(self.peak, int(count))
                await asyncio.sleep(0.05)
        finally:
            await conn.close()

    def __enter__(self) -> PeakConnections:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
