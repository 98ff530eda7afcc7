"""Fresh databases for tests: a new SQLite file, or a new PostgreSQL database in the local cluster."""

from __future__ import annotations

import asyncio
import os
import shutil
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


async def _create_pg(name: str, template: str | None = None) -> None:
    conn = await asyncpg.connect(POSTGRES_ADMIN_DSN)
    try:
        copy = f' TEMPLATE "{template}"' if template else ""
        await conn.execute(f'CREATE DATABASE "{name}"{copy}')
    finally:
        await conn.close()


async def _drop_pg(name: str) -> None:
    conn = await asyncpg.connect(POSTGRES_ADMIN_DSN)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def _pg_url(name: str) -> str:
    base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{name}"


async def _migrate(url: str) -> None:
    from switchboard.db.engine import make_engine
    from switchboard.db.migrate import upgrade

    engine = make_engine(url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()


class DatabaseFactory:
    """Hands out databases of the selected backend, empty or migrated, and removes them at the end.

    A migrated one is a copy of a template this process migrated once (a file copy for SQLite,
    `CREATE DATABASE ... TEMPLATE` for PostgreSQL): the suite starts a hundred-odd gateways, and
    running every migration for each cost it about a second apiece. Tests of migrating itself ask
    for an empty database.
    """

    def __init__(self, tmp_dir: Path) -> None:
        self.tmp_dir = tmp_dir
        self.kind = backend()
        self._pg_names: list[str] = []
        self._template: str | None = None  # a PostgreSQL database name, or a SQLite file's path

    async def create(self, *, migrated: bool = False) -> str:
        template = await self._migrated_template() if migrated else None
        if self.kind == "postgres":
            name = f"sb_test_{uuid.uuid4().hex[:12]}"
            await _create_pg(name, template)
            self._pg_names.append(name)
            return _pg_url(name)
        path = self.tmp_dir / f"db-{uuid.uuid4().hex[:8]}" / "switchboard.db"
        path.parent.mkdir(parents=True)
        if template is not None:
            # Closed by its one engine before any copy, so the file holds every page (no WAL left).
            shutil.copyfile(template, path)
        return f"sqlite+aiosqlite:///{path}"

    async def _migrated_template(self) -> str:
        if self._template is None:
            if self.kind == "postgres":
                name = f"sb_template_{uuid.uuid4().hex[:12]}"
                await _create_pg(name)
                self._pg_names.append(name)
                await _migrate(_pg_url(name))
                self._template = name
            else:
                path = self.tmp_dir / f"template-{uuid.uuid4().hex[:8]}" / "switchboard.db"
                path.parent.mkdir(parents=True)
                await _migrate(f"sqlite+aiosqlite:///{path}")
                assert not path.with_name(path.name + "-wal").exists(), "the template's WAL was left"
                self._template = str(path)
        return self._template

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
