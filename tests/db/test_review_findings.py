"""The ledger's connections at their edges: PostgreSQL connections kept between reservations
(db/kept_connections.py) at shutdown, after a cancel and after the server dropped them; SQLite's
inline transaction when the write lock is busy (its fallback) and a cancel reaches its end."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import asyncpg
import pytest
from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.db import write_transaction
from switchboard.db.base import Base
from switchboard.db.engine import make_engine
from switchboard.db.kept_connections import KeptConnections
from switchboard.db.models_registry import import_all_models
from switchboard.db.write_transaction import InlineConnection, WriteTransactions
from switchboard.limits.models import LimitHoldRow
from tests.support.databases import POSTGRES_ADMIN_DSN, _create_pg, _drop_pg

HOLDS = cast(Table, LimitHoldRow.__table__)


@asynccontextmanager
async def postgres_engine() -> AsyncIterator[AsyncEngine]:
    """A fresh database in the local cluster (always PostgreSQL: kept connections exist only there)."""
    name = f"sb_kept_{uuid.uuid4().hex[:12]}"
    await _create_pg(name)
    base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    engine = make_engine(f"{base}/{name}")
    try:
        yield engine
    finally:
        await engine.dispose()
        await _drop_pg(name)


async def settled(engine: AsyncEngine) -> int:
    """The pool's checked-out connections once the closes handed to tasks have run."""
    deadline = asyncio.get_running_loop().time() + 5
    while engine.pool.checkedout() and asyncio.get_running_loop().time() < deadline:  # type: ignore[attr-defined]
        await asyncio.sleep(0.01)
    return int(engine.pool.checkedout())  # type: ignore[attr-defined]


def test_a_lease_that_ends_after_shutdown_closes_its_connection() -> None:
    """Shutdown closes the kept connections; one leased at that moment (a request still running) is
    closed when its lease ends, not kept where nothing will ever close it."""

    async def scenario() -> None:
        async with postgres_engine() as engine:
            transactions = WriteTransactions(engine)
            lease = transactions.driver_connection()
            driver = await lease.__aenter__()
            assert await driver.fetchval("SELECT 1") == 1
            await transactions.aclose()
            await lease.__aexit__(None, None, None)
            assert await settled(engine) == 0

    asyncio.run(scenario())


def test_a_connection_kept_after_a_long_lease_is_still_closed_once_idle() -> None:
    """A lease that outlasts the idle timer's last look (which found nothing idle and stopped) still
    has its connection closed once it has been idle that long: an idle process holds none."""

    async def scenario() -> None:
        async with postgres_engine() as engine:
            kept = KeptConnections(engine, idle_seconds=0.05)
            async with kept.lease() as driver:
                await asyncio.sleep(0.3)  # the timer looks twice: used, then nothing idle
                assert await driver.fetchval("SELECT 1") == 1
            assert await settled(engine) == 0  # closed by the idle timer, not by close() below
            await kept.close()

    asyncio.run(scenario())


def test_a_lease_cancelled_mid_statement_gives_the_next_caller_another_connection() -> None:
    async def scenario() -> None:
        async with postgres_engine() as engine:
            transactions = WriteTransactions(engine)
            started = asyncio.Event()
            pids: list[int] = []

            async def slow() -> None:
                async with transactions.driver_connection() as driver:
                    pids.append(driver.get_server_pid())
                    started.set()
                    await driver.fetchval("SELECT pg_sleep(5)")

            task = asyncio.create_task(slow())
            await started.wait()
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            async with transactions.driver_connection() as driver:
                assert driver.get_server_pid() != pids[0]
                assert await driver.fetchval("SELECT 1") == 1
            await transactions.aclose()
            assert await settled(engine) == 0

    asyncio.run(scenario())


def test_a_kept_connection_the_server_dropped_is_not_handed_out_again() -> None:
    """A connection the server closed while it was kept idle (a restart, an idle timeout) is left
    behind at the next lease, as SQLAlchemy's pool would recycle it: no reservation fails on it."""

    async def scenario() -> None:
        async with postgres_engine() as engine:
            transactions = WriteTransactions(engine)
            async with transactions.driver_connection() as driver:
                pid = driver.get_server_pid()
            admin = await asyncpg.connect(POSTGRES_ADMIN_DSN)
            try:
                assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            finally:
                await admin.close()
            for _ in range(100):  # the loop sees the socket close
                if driver.is_closed():
                    break
                await asyncio.sleep(0.01)
            async with transactions.driver_connection() as again:
                assert await again.fetchval("SELECT 1") == 1
            await transactions.aclose()
            assert await settled(engine) == 0

    asyncio.run(scenario())


def test_a_lease_left_inside_a_transaction_does_not_hand_it_to_the_pool() -> None:
    """SQLAlchemy's reset on return rolls back only the transactions it began itself: a connection
    left inside one begun on the driver is dropped, not given to the engine's next user as it is."""

    async def scenario() -> None:
        async with postgres_engine() as engine:
            transactions = WriteTransactions(engine)
            async with transactions.driver_connection() as driver:
                await driver.execute("BEGIN")
                await driver.execute("CREATE TABLE left_open (id int)")
            assert await settled(engine) == 0
            async with engine.connect() as conn:
                raw = (await conn.get_raw_connection()).driver_connection
                assert not raw.is_in_transaction()
            await transactions.aclose()

    asyncio.run(scenario())


def test_the_inline_fallback_rolls_back_on_a_cancel_and_frees_the_next_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's write lock held by another connection: `begin()` falls back to the engine's own
    transaction; a cancel thrown into its end rolls it back, and the next `begin()` is inline again."""
    monkeypatch.setattr(write_transaction, "INLINE_RETRY_PAUSES", (0.001,))

    async def scenario() -> None:
        import_all_models()
        path = tmp_path / "fallback.db"
        engine = make_engine(f"sqlite+aiosqlite:///{path}")
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        transactions = WriteTransactions(engine)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        release = asyncio.get_running_loop().call_later(0.2, other.execute, "COMMIT")
        row = {
            "call_id": "c1",
            "limit_id": uuid.uuid4(),
            "amount": 1,
            "lease_until": datetime.now(UTC),
            "call": None,
        }
        with pytest.raises(asyncio.CancelledError):
            async with transactions.begin() as conn:
                assert not isinstance(conn, InlineConnection)  # the fallback
                await conn.execute(HOLDS.insert(), [row])
                raise asyncio.CancelledError
        release.cancel()
        other.close()
        async with transactions.begin() as conn:
            assert isinstance(conn, InlineConnection)
            assert await conn.scalar(select(func.count()).select_from(HOLDS)) == 0
        await transactions.aclose()
        await engine.dispose()

    asyncio.run(scenario())
