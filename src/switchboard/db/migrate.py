"""Brings the database to the latest migration: once, however many processes start at the same time.

Every start calls `upgrade`. When the database is at the head already (nearly every start) that is
one query and Alembic is never imported (importing it costs a worker ~0.15 s of CPU). Otherwise the
processes take turns, each checking again under the lock: PostgreSQL's advisory lock, or for SQLite
an exclusive `flock` on a file beside the database. The kernel or the server releases either lock
when its holder dies, so a crashed start never leaves the next one waiting.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger("switchboard.db")
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
VERSIONS_DIR = MIGRATIONS_DIR / "versions"
VERSION_TABLE = "alembic_version"  # Alembic's default, which migrations/env.py keeps
_ADVISORY_LOCK_ID = 0x5B0A_2D01
_LOCK_POLL_SECONDS = 0.05
# A module-level `revision = "…"` / `down_revision = …` line of a migration file (optionally annotated).
_ASSIGNMENT = re.compile(r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(.+?)\s*$", re.MULTILINE)


class MigrationError(Exception):
    """The schema could not be brought to the latest migration; the message says which and why."""


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _revision_pair(source: str) -> tuple[str, tuple[str, ...]] | None:
    found: dict[str, list[object]] = {"revision": [], "down_revision": []}
    for name, value in _ASSIGNMENT.findall(source):
        try:
            found[name].append(ast.literal_eval(value))
        except (ValueError, SyntaxError):
            return None
    if len(found["revision"]) != 1 or len(found["down_revision"]) != 1:
        return None
    revision, down = found["revision"][0], found["down_revision"][0]
    parents = (down,) if isinstance(down, str) else () if down is None else down
    if not isinstance(revision, str) or not isinstance(parents, tuple):
        return None
    if not all(isinstance(parent, str) for parent in parents):
        return None
    return revision, tuple(str(parent) for parent in parents)


@functools.cache
def head_revision(versions: Path = VERSIONS_DIR) -> str | None:
    """The one head of the migration files in `versions`, read without importing Alembic.

    None whenever the files do not say plainly (a file we cannot read this way, several heads): the
    caller then lets Alembic decide, which is always right, only slower.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in versions.glob("*.py"):
        if path.name == "__init__.py":
            continue
        pair = _revision_pair(path.read_text(encoding="utf-8"))
        if pair is None:
            return None
        revisions.add(pair[0])
        parents.update(pair[1])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def at_head(connection: Connection, head: str | None) -> bool:
    if head is None or not inspect(connection).has_table(VERSION_TABLE):
        return False
    versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return list(versions) == [head]


def _run_alembic(connection: Connection) -> None:
    from alembic import command

    command.upgrade(alembic_config(connection), "head")


@contextlib.asynccontextmanager
async def _file_lock(path: Path) -> AsyncIterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # Polled rather than blocking in a thread, so that a start stopped while waiting stops at once.
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(_LOCK_POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # releases the lock


def _sqlite_lock_path(engine: AsyncEngine) -> Path | None:
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None  # an in-memory database belongs to one process: nobody to take turns with
    return Path(f"{database}-migrate.lock")


async def _upgrade_locked(conn: AsyncConnection, head: str | None) -> bool:
    """True when this call migrated; False when another process did so while this one waited."""
    if conn.dialect.name == "postgresql":
        # Held until this transaction ends, which is after Alembic's work is committed.
        await conn.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _ADVISORY_LOCK_ID})
    if await conn.run_sync(at_head, head):
        return False
    await conn.run_sync(_run_alembic)
    return True


async def upgrade(engine: AsyncEngine) -> None:
    """Brings the schema to the head revision, or raises `MigrationError`."""
    head = head_revision()
    async with engine.connect() as conn:
        if await conn.run_sync(at_head, head):
            return
    target = f"revision {head}" if head else "the latest revision"
    lock_path = _sqlite_lock_path(engine)
    turn = _file_lock(lock_path) if lock_path else contextlib.nullcontext()
    try:
        async with turn, engine.begin() as conn:
            migrated = await _upgrade_locked(conn, head)
    except Exception as exc:
        reason = getattr(exc, "orig", None) or exc  # the driver's own words, without the statement
        raise MigrationError(f"migrating the database to {target} failed: {reason}") from exc
    if migrated:
        log.info("database migrated to %s", target)
