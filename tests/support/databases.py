"""Fresh databases for tests: a new SQLite file, or a new PostgreSQL database in the local cluster."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import asyncpg

# The server the test command started (or the one SWITCHBOARD_TEST_DATABASE_URL names): tests create and
# drop databases of their own in it. SWITCHBOARD_TEST_POSTGRES_DSN is the older name.
POSTGRES_ADMIN_DSN = os.environ.get("SWITCHBOARD_TEST_DATABASE_URL") or os.environ.get(
    "SWITCHBOARD_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)


def backend() -> str:
    return os.environ.get("SWITCHBOARD_TEST_DB", "sqlite")


async def _create_pg(name: str) -> None:
    conn = await asyncpg.connect(POSTGRES_ADMIN_DSN)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def _drop_pg(name: str) -> None:
    conn = await asyncpg.connect(POSTGRES_ADMIN_DSN)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


class DatabaseFactory:
    """Hands out empty databases of the selected backend and removes them at the end."""

    def __init__(self, tmp_dir: Path) -> None:
        self.tmp_dir = tmp_dir
        self.kind = backend()
        self._pg_names: list[str] = []

    async def create(self) -> str:
        if self.kind == "postgres":
            name = f"sb_test_{uuid.uuid4().hex[:12]}"
            await _create_pg(name)
            self._pg_names.append(name)
            base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
            return f"{base}/{name}"
        path = self.tmp_dir / f"db-{uuid.uuid4().hex[:8]}" / "switchboard.db"
        path.parent.mkdir(parents=True)
        return f"sqlite+aiosqlite:///{path}"

    async def cleanup(self) -> None:
        # A few at a time: a session leaves dozens, and each drop waits for its server's checkpoint.
        room = asyncio.Semaphore(4)

        async def drop(name: str) -> None:
            async with room:
                await _drop_pg(name)

        await asyncio.gather(*(drop(name) for name in self._pg_names))
        self._pg_names.clear()


async def alembic_versions(url: str) -> list[str]:
    """The revisions recorded in the database's alembic_version table (one, once migrated)."""
    from sqlalchemy import text

    from switchboard.db.engine import make_engine

    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return list((await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars())
    finally:
        await engine.dispose()


def sqlite_bytes(*paths: Path) -> bytes:
    """The files' bytes, read by another process.

    POSIX record locks belong to the process: closing any descriptor of a SQLite file drops every
    lock this process holds on it. A running in-process gateway would then look closed to the next
    process that opens the database (a CLI under test), which checkpoints and deletes the WAL under
    it: the gateway's next connection fails with "disk I/O error" or "database disk image is malformed".
    """
    existing = [str(path) for path in paths if path.exists()]
    if not existing:
        return b""
    return subprocess.run(["cat", *existing], check=True, capture_output=True).stdout
