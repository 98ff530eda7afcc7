"""Statements run on SQLite's driver store and read back exactly what SQLAlchemy stores and reads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.db.base import Base
from switchboard.db.driver_statements import driver_ready
from switchboard.db.engine import make_engine
from switchboard.db.models_registry import import_all_models
from switchboard.db.write_transaction import InlineConnection, WriteTransactions
from switchboard.limits.models import LimitHoldRow

HOLDS = cast(Table, LimitHoldRow.__table__)
INSERT = driver_ready(HOLDS.insert())
READ = driver_ready(select(HOLDS).where(HOLDS.c.call_id == "c1"))


@asynccontextmanager
async def ledger_database(path: Path) -> AsyncIterator[tuple[AsyncEngine, WriteTransactions]]:
    """A fresh SQLite file with every table, its engine and its write transactions."""
    import_all_models()
    engine = make_engine(f"sqlite+aiosqlite:///{path}")
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    transactions = WriteTransactions(engine)
    try:
        yield engine, transactions
    finally:
        transactions.close()
        await engine.dispose()


def test_a_row_written_on_the_driver_reads_back_through_sqlalchemy_and_the_other_way(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with ledger_database(tmp_path / "driver.db") as (engine, transactions):
            row = {
                "call_id": "c1",
                "limit_id": uuid.uuid4(),
                "amount": 2**62,
                "lease_until": datetime(2026, 11, 25, 10, 0, 0, 123456, tzinfo=UTC),
                "call": {"model": "gpt", "tokens": [1, 2], "none": None},
            }
            async with transactions.begin() as conn:
                assert isinstance(conn, InlineConnection)  # the driver path, not a fallback
                assert (await conn.execute(INSERT, [row])).rowcount == 1
            async with engine.connect() as conn:
                stored = (await conn.execute(select(HOLDS))).one()._asdict()
            assert stored == row
            other = {**row, "limit_id": uuid.uuid4(), "call_id": "c2"}
            async with engine.begin() as conn:
                await conn.execute(HOLDS.insert(), [{**other, "call_id": "c1", "amount": 7}])
            async with transactions.begin() as conn:
                read = sorted((r._asdict() for r in await conn.execute(READ, {})), key=lambda r: r["amount"])
            assert read == [{**other, "call_id": "c1", "amount": 7}, row]

    asyncio.run(scenario())


def test_values_given_again_as_the_same_object_or_a_new_one_are_each_stored_as_they_are(
    tmp_path: Path,
) -> None:
    """The driver path converts a time or an id once when the same object comes again (a lease shared
    by a call's holds, a limit's id): rows with shared, equal and different values all read back."""

    async def scenario() -> None:
        async with ledger_database(tmp_path / "again.db") as (engine, transactions):
            lease = datetime(2026, 11, 26, 9, 0, 0, 1, tzinfo=UTC)
            limit = uuid.uuid4()
            rows = [
                {"call_id": "a", "limit_id": limit, "amount": 1, "lease_until": lease, "call": None},
                {"call_id": "b", "limit_id": limit, "amount": 2, "lease_until": lease, "call": None},
                {
                    "call_id": "c",
                    "limit_id": uuid.UUID(str(limit)),
                    "amount": 3,
                    "lease_until": lease.replace(),
                    "call": None,
                },
                {
                    "call_id": "d",
                    "limit_id": uuid.uuid4(),
                    "amount": 4,
                    "lease_until": lease.replace(second=5),
                    "call": None,
                },
                {"call_id": "e", "limit_id": limit, "amount": 5, "lease_until": lease, "call": None},
            ]
            async with transactions.begin() as conn:
                assert (await conn.execute(INSERT, rows)).rowcount == len(rows)
            async with engine.connect() as conn:
                stored = [r._asdict() for r in await conn.execute(select(HOLDS).order_by(HOLDS.c.amount))]
            assert stored == rows

    asyncio.run(scenario())


def test_rows_alternating_between_a_few_values_and_more_values_than_are_remembered_store_each_as_it_is(
    tmp_path: Path,
) -> None:
    """The conversions are remembered by object, a few at a time: a call's holds alternate between
    its limits' ids, and past what is remembered the memory starts over. Every row reads back as given,
    including an id object equal to a remembered one and a time whose earlier object was freed."""

    async def scenario() -> None:
        async with ledger_database(tmp_path / "many.db") as (engine, transactions):
            limits = [uuid.uuid4(), uuid.uuid4(), uuid.uuid4()]
            start = datetime(2026, 11, 26, 9, 0, 0, tzinfo=UTC)
            rows = []
            for index in range(200):  # three times what a processor remembers
                rows.append(
                    {
                        "call_id": f"call-{index}",
                        "limit_id": limits[index % 3] if index % 5 else uuid.uuid4(),
                        "amount": index,
                        "lease_until": start + timedelta(microseconds=index // 2),
                        "call": None,
                    }
                )
            for batch in (rows[:7], rows[7:100], rows[100:]):  # several statements share the memory
                async with transactions.begin() as conn:
                    assert (await conn.execute(INSERT, batch)).rowcount == len(batch)
            again = {**rows[0], "call_id": "again", "limit_id": uuid.UUID(str(rows[1]["limit_id"]))}
            async with transactions.begin() as conn:
                await conn.execute(INSERT, again)
            async with engine.connect() as conn:
                stored = [r._asdict() for r in await conn.execute(select(HOLDS).order_by(HOLDS.c.amount))]
            assert sorted(stored, key=lambda r: (r["amount"], r["call_id"])) == sorted(
                [*rows, again], key=lambda r: (r["amount"], r["call_id"])
            )

    asyncio.run(scenario())


def test_a_time_made_anew_for_each_statement_is_stored_as_it_is(tmp_path: Path) -> None:
    """Objects made for one statement and dropped after it: a new one may come at the same address,
    and must not be taken for the one remembered there."""

    async def scenario() -> None:
        async with ledger_database(tmp_path / "anew.db") as (engine, transactions):
            limit = uuid.uuid4()
            start = datetime(2026, 11, 26, 9, 0, 0, tzinfo=UTC)
            for index in range(150):
                async with transactions.begin() as conn:
                    row = {
                        "call_id": f"call-{index}",
                        "limit_id": limit,
                        "amount": index,
                        "lease_until": start + timedelta(seconds=index),
                        "call": None,
                    }
                    await conn.execute(INSERT, [row])
                del row
            async with engine.connect() as conn:
                stored = [(r.amount, r.lease_until) for r in await conn.execute(select(HOLDS))]
            assert sorted(stored) == [(index, start + timedelta(seconds=index)) for index in range(150)]

    asyncio.run(scenario())
