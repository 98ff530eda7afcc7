"""Builds the async engine and session factory for SQLite or PostgreSQL."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

# Turning a new database file to WAL needs it to itself: processes opening it together can get
# "database is locked" at once, without SQLite's busy handler. They take turns instead.
WAL_SWITCH_TRIES = 200
WAL_SWITCH_PAUSE = 0.05


def _sqlite_pragmas(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    for attempt in range(WAL_SWITCH_TRIES):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except Exception as error:
            if "locked" not in str(error) or attempt == WAL_SWITCH_TRIES - 1:
                raise
            time.sleep(WAL_SWITCH_PAUSE)
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _unknown(value: Any) -> str:
    # orjson writes uuid.UUID itself but not subclasses: ids read through asyncpg are its own UUID type.
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def json_text(value: Any) -> str:
    """JSON columns' serializer: orjson, several times faster than the json module SQLAlchemy
    defaults to (the ledger writes a JSON recovery record on every call under a limit)."""
    return orjson.dumps(value, default=_unknown, option=orjson.OPT_NON_STR_KEYS).decode()


def make_engine(database_url: str, **overrides: Any) -> AsyncEngine:
    kwargs: dict[str, Any] = {"json_serializer": json_text}
    if database_url.startswith("sqlite"):
        path = database_url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": 10}
    else:
        # No pre-ping: it costs a round trip on every checkout of the hot path; a connection the
        # server dropped fails once and the pool is invalidated and refilled.
        kwargs.update(pool_size=20, max_overflow=20, pool_recycle=1800)
    kwargs.update(overrides)
    engine = create_async_engine(database_url, **kwargs)
    if database_url.startswith("sqlite"):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def make_sync_sqlite_engine(async_url: str) -> Engine:
    """A blocking engine on the same SQLite file, for work done in one thread hop (the usage writer)."""
    sync_url = async_url.replace("+aiosqlite", "+pysqlite", 1)
    engine = create_engine(sync_url, connect_args={"timeout": 10}, json_serializer=json_text)
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine
