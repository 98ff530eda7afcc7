"""A call admitted on an allowance leaves its record for recovery before the provider is called, on a
row shared with the calls starting together (`Allowances.record`). A call cancelled while that write
waits never goes on: it is released from the allowance at once, and its row, which the write still
lands, is deleted at the next upkeep (its only call never settles); a row whose calls have all settled
goes with the next records written. On PostgreSQL, where another transaction can hold the write
back deterministically (a table lock); the SQLite run of the suite starts the local cluster like
every other. The last test runs on the suite's database."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

import asyncpg
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.db.engine import make_engine
from switchboard.db.migrate import upgrade
from switchboard.db.write_transaction import WriteTransactions
from switchboard.limits.models import LimitHoldRow
from tests.limits.test_grant_in_one_statement import an_allowance
from tests.support.databases import POSTGRES_ADMIN_DSN, DatabaseFactory, _create_pg, _drop_pg


@asynccontextmanager
async def ledger() -> AsyncIterator[tuple[AsyncEngine, WriteTransactions, str]]:
    name = f"sb_records_{uuid.uuid4().hex[:12]}"
    await _create_pg(name)
    base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0]
    engine = make_engine(f"{base.replace('postgresql://', 'postgresql+asyncpg://')}/{name}")
    transactions = WriteTransactions(engine)
    try:
        await upgrade(engine)
        yield engine, transactions, f"{base}/{name}"
    finally:
        await transactions.aclose()
        await engine.dispose()
        await _drop_pg(name)


@asynccontextmanager
async def suite_ledger(databases: DatabaseFactory) -> AsyncIterator[tuple[AsyncEngine, WriteTransactions]]:
    """A migrated database of the kind the suite runs on, with its write transactions."""
    engine = make_engine(await databases.create(migrated=True))
    transactions = WriteTransactions(engine)
    try:
        yield engine, transactions
    finally:
        await transactions.aclose()
        await engine.dispose()


async def row_names(engine: AsyncEngine) -> set[str]:
    async with engine.begin() as conn:
        return set((await conn.execute(select(LimitHoldRow.call_id))).scalars())


def test_a_call_cancelled_while_its_record_is_written_is_released_and_its_row_dropped() -> None:
    async def scenario() -> None:
        async with ledger() as (engine, transactions, dsn):
            _, allowances, allowance = await an_allowance(transactions)
            await allowances.refill(allowance)  # a grant: 125 worst cases
            flight = allowance.take([1000], lambda: {"call_id": "c1", "status": "abandoned"})
            assert flight is not None
            allowance.started()

            blocker = await asyncpg.connect(dsn)
            try:
                locked = blocker.transaction()
                await locked.start()
                await blocker.execute("LOCK TABLE limit_holds IN EXCLUSIVE MODE")  # inserts wait
                call = asyncio.ensure_future(allowances.record(allowance, flight))
                for _ in range(300):  # until the insert waits for the lock
                    waiting = await blocker.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted")
                    if waiting:
                        break
                    await asyncio.sleep(0.1)
                assert waiting and not call.done()

                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
                # Released at once: nothing of it is held in memory, the allowance is free again.
                assert (allowance.in_flight, allowance.unsettled, allowance.flights) == (0, 0, {})
                assert allowance.held == [0] and allowance.room() == 125
                await locked.commit()
            finally:
                await blocker.close()

            for _ in range(300):  # the write lands after all
                if flight.batch is not None and flight.batch.name in await row_names(engine):
                    break
                await asyncio.sleep(0.1)
            assert flight.batch is not None and flight.batch.name in await row_names(engine)

            await allowances.tick()  # the next upkeep
            assert flight.batch.name not in await row_names(engine)

    asyncio.run(scenario())


def test_a_row_of_records_goes_at_the_upkeep_after_its_last_call_settled() -> None:
    """Calls that start together share one row; it stays while one of them runs, and goes at the
    next upkeep once the last has settled, for rows made before an upkeep as after one."""

    async def scenario() -> None:
        async with ledger() as (engine, transactions, _):
            _, allowances, allowance = await an_allowance(transactions)
            for round_ in range(2):  # the second round's row is made after upkeeps ran
                await allowances.refill(allowance)  # the last settlement gave the allowance back
                flights = [allowance.take([1000], lambda: {"call_id": f"c{round_}"}) for _ in range(2)]
                assert all(flight is not None for flight in flights)
                for _ in flights:
                    allowance.started()
                await asyncio.gather(*(allowances.record(allowance, flight) for flight in flights if flight))
                names = {flight.batch.name for flight in flights if flight and flight.batch}
                assert len(names) == 1 and names <= await row_names(engine)

                first, second = flights
                assert first is not None and second is not None
                allowance.settling()
                allowance.ended(first, [1000])
                await allowances.tick()
                assert names <= await row_names(engine)  # its other call still runs

                allowance.settling()
                allowance.ended(second, [1000])
                await allowances.tick()
                assert not names & await row_names(engine)

    asyncio.run(scenario())


def test_a_settled_row_of_records_goes_with_the_next_records_written(databases: DatabaseFactory) -> None:
    """Once its last call has settled, a row of records is deleted in the write of the next calls'
    records, not left for the upkeep: every reservation and grant sums its limits' rows, and a busy
    process writes hundreds between two upkeeps. On the database the suite runs on."""

    async def scenario() -> None:
        async with suite_ledger(databases) as (engine, transactions):
            _, allowances, allowance = await an_allowance(transactions)
            rows = []
            for round_ in range(3):
                await allowances.refill(allowance)  # the last settlement gave the allowance back
                flight = allowance.take([1000], lambda: {"call_id": f"c{round_}"})
                assert flight is not None
                allowance.started()
                await allowances.record(allowance, flight)
                assert flight.batch is not None
                rows.append(flight.batch.name)
                # The write left this round's row and deleted the last round's, whose call settled.
                names = await row_names(engine)
                assert rows[-1] in names and not set(rows[:-1]) & names
                allowance.settling()
                allowance.ended(flight, [1000])

    asyncio.run(scenario())


def test_the_upkeep_renews_a_process_rows_once_a_third_of_their_lease_has_passed(
    databases: DatabaseFactory,
) -> None:
    """Every row is written with a whole lease, so the upkeep (every 2 s) renews them only once a
    third of it has passed: a lease never gets within two thirds of running out, and a busy process
    does not rewrite its rows at every tick. A lease of 3 s here: a third is 1 s."""

    async def scenario() -> None:
        async with suite_ledger(databases) as (engine, transactions):
            _, allowances, allowance = await an_allowance(transactions, lease_seconds=3.0)
            await allowances.refill(allowance)
            assert allowance.take([1000], lambda: {"call_id": "c1"}) is not None
            allowance.started()  # a call runs on it: not idle, not given back

            async def lease() -> datetime:
                async with engine.begin() as conn:
                    return (
                        await conn.execute(
                            select(LimitHoldRow.lease_until).where(LimitHoldRow.call_id == allowance.name)
                        )
                    ).scalar_one()

            granted = await lease()
            await allowances.tick()  # the first tick renews
            renewed = await lease()
            assert renewed > granted
            await allowances.tick()  # at once again: not yet
            assert await lease() == renewed
            await asyncio.sleep(1.1)  # a third of the lease has passed
            await allowances.tick()
            assert await lease() > renewed

    asyncio.run(scenario())


def test_rows_a_cancelled_records_write_was_to_delete_are_left_for_the_upkeep() -> None:
    """A records write also deletes the rows whose calls have all settled; cancelled while it waits
    (at shutdown), it hands them back so that the upkeep or `close` deletes them (a PostgreSQL
    statement may still complete after its task was cancelled: deleting twice changes nothing)."""

    async def scenario() -> None:
        async with ledger() as (engine, transactions, dsn):
            _, allowances, allowance = await an_allowance(transactions)
            await allowances.refill(allowance)
            first = allowance.take([1000], lambda: {"call_id": "c1"})
            second = allowance.take([1000], lambda: {"call_id": "c2"})
            assert first is not None and second is not None
            allowance.started()
            allowance.started()
            await allowances.record(allowance, first)
            assert first.batch is not None
            settled = first.batch.name
            allowance.settling()
            allowance.ended(first, [1000])  # its row is now to be deleted with the next write

            blocker = await asyncpg.connect(dsn)
            try:
                locked = blocker.transaction()
                await locked.start()
                await blocker.execute("LOCK TABLE limit_holds IN EXCLUSIVE MODE")  # the write waits
                call = asyncio.ensure_future(allowances.record(allowance, second))
                for _ in range(300):
                    if await blocker.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"):
                        break
                    await asyncio.sleep(0.1)
                writer = allowances._records._writer  # shutdown cancels it
                assert writer is not None
                writer.cancel()
                await asyncio.gather(writer, return_exceptions=True)
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
                await locked.rollback()
            finally:
                await blocker.close()

            # Whether the cancelled statement still went through or not, the row is handed back.
            assert settled in {name for _, name, _ in allowances._records.done}
            await allowances.tick()
            assert settled not in await row_names(engine)

    asyncio.run(scenario())
