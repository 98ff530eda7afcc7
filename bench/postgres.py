"""A fresh PostgreSQL database for one run, dropped afterwards."""

from __future__ import annotations

import asyncio
import os
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
