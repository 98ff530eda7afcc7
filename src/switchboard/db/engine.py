"""Builds the async engine and session factory for SQLite or PostgreSQL."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from switchboard.db.budgeted_pool import BudgetedPool

# PostgreSQL connections one process opens at most (SWITCHBOARD_DATABASE_POOL_SIZE). At concurrency 64
# a process opens as many as it may (40 before), for the same work per CPU as with 10
# (docs/postgres-connections.md); 10 lets eight busy processes share a server of the default
# max_connections (100) with 20 left for migrations and an operator.
DEFAULT_POOL_SIZE = 10
# How long a caller waits for a connection of the budget before its request fails.
POOL_TIMEOUT_SECONDS = 30.0

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


def _unnamed_statement() -> str:
    return ""  # asyncpg's unnamed prepared statement: replaced by the next, never left on the server


def _postgres_kwargs(database_url: str, pool_size: int) -> tuple[str, dict[str, Any]]:
    """The URL without `statement_cache_size`, and the engine's arguments: a hard budget of
    `pool_size` connections (no overflow), and no prepared statement kept when the URL says
    `statement_cache_size=0` (PgBouncer in transaction mode: a prepared statement lives on one
    server connection, and the next transaction may run on another)."""
    url = make_url(database_url)
    # No pre-ping: it costs a round trip on every checkout of the hot path; a connection the
    # server dropped fails once and the pool is invalidated and refilled.
    kwargs: dict[str, Any] = {
        "poolclass": BudgetedPool,
        "pool_size": pool_size,
        "max_overflow": 0,
        "pool_timeout": POOL_TIMEOUT_SECONDS,
        "pool_recycle": 1800,
    }
    cache_size = url.query.get("statement_cache_size")
    if cache_size is None:
        return database_url, kwargs
    try:
        statements = int(str(cache_size))
    except ValueError:
        raise ValueError("statement_cache_size in the database URL must be a whole number") from None
    connect_args: dict[str, Any] = {"statement_cache_size": statements}
    if statements == 0:
        # SQLAlchemy prepares every statement itself; unnamed, it is parsed and run in one transaction.
        connect_args["prepared_statement_cache_size"] = 0
        connect_args["prepared_statement_name_func"] = _unnamed_statement
    kwargs["connect_args"] = connect_args
    return url.difference_update_query(["statement_cache_size"]).render_as_string(hide_password=False), kwargs


def make_engine(database_url: str, *, pool_size: int = DEFAULT_POOL_SIZE, **overrides: Any) -> AsyncEngine:
    """`pool_size`: PostgreSQL connections this engine opens at most (SQLite has its own pool)."""
    # A statement's parameters never reach a log line or an error message (a logged traceback would
    # otherwise show them, sealed credentials among them).
    kwargs: dict[str, Any] = {"json_serializer": json_text, "hide_parameters": True}
    if database_url.startswith("sqlite"):
        path = database_url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": 10}
    else:
        database_url, more = _postgres_kwargs(database_url, pool_size)
        kwargs.update(more)
    connect_args = {**kwargs.get("connect_args", {}), **overrides.pop("connect_args", {})}
    kwargs.update(overrides, connect_args=connect_args)
    engine = create_async_engine(database_url, **kwargs)
    if database_url.startswith("sqlite"):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def make_sync_sqlite_engine(async_url: str) -> Engine:
    """A blocking engine on the same SQLite file, for work done in one thread hop (the usage writer)."""
    sync_url = async_url.replace("+aiosqlite", "+pysqlite", 1)
    engine = create_engine(
        sync_url, connect_args={"timeout": 10}, json_serializer=json_text, hide_parameters=True
    )
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine
