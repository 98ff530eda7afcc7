"""PostgreSQL reserves in two round trips (migration 0012's `switchboard_reserve`): it holds a call's
needs only while each fits under the limits' locks, says what it saw when they do not, and leaves a
calendar window without its counter to the locked transaction. Always on PostgreSQL: the function
exists only there (the SQLite run of the suite starts the local cluster like every other)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, insert, select

from switchboard.db.engine import make_engine
from switchboard.db.migrate import upgrade
from switchboard.db.write_transaction import WriteTransactions
from switchboard.errors import LimitRateExceeded
from switchboard.limits import ledger
from switchboard.limits.models import LimitHoldRow, LimitRow, LimitUsageRow
from switchboard.limits.postgres_reserve import reserve_in_one_statement
from switchboard.limits.rules import EPOCH, Limit, window_start
from tests.support.databases import POSTGRES_ADMIN_DSN, _create_pg, _drop_pg


@asynccontextmanager
async def postgres_ledger() -> AsyncIterator[WriteTransactions]:
    name = f"sb_reserve_{uuid.uuid4().hex[:12]}"
    await _create_pg(name)
    base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    engine = make_engine(f"{base}/{name}")
    transactions = WriteTransactions(engine)
    try:
        await upgrade(engine)
        yield transactions
    finally:
        await transactions.aclose()
        await engine.dispose()
        await _drop_pg(name)


async def one_statement(
    transactions: WriteTransactions,
    limits: list[Limit],
    plan: ledger.Planner,
    call_id: str,
    call: dict[str, str] | None,
    lease_seconds: float,
) -> dict[uuid.UUID, int] | None:
    return await reserve_in_one_statement(transactions, limits, plan, call_id, call, lease_seconds)


def limit(metric: str, window: str, amount: int) -> Limit:
    return Limit(uuid.uuid4(), "economy", str(uuid.uuid4()), None, metric, window, amount)  # type: ignore[arg-type]


async def store(transactions: WriteTransactions, *limits: Limit, used: dict[uuid.UUID, int]) -> None:
    now = datetime.now(UTC)
    async with transactions.begin() as conn:
        for item in limits:
            await conn.execute(
                insert(LimitRow).values(
                    id=item.id, subject_type=item.subject_type, subject_id=item.subject_id, economy_id=None,
                    metric=item.metric, time_window=item.window, amount=str(item.amount),
                    allow_unpriced=False, managed_by="api", created_by=None, created_at=now, updated_at=now,
                )
            )  # fmt: skip
            if item.id in used:
                start = EPOCH if item.rolling else window_start(item.window, now)
                await conn.execute(
                    insert(LimitUsageRow).values(
                        limit_id=item.id, window_start=start, used=used[item.id], updated_at=now
                    )
                )


def asking(**needs_by_metric: int) -> tuple[ledger.Planner, list[list[ledger.Standing]]]:
    """A planner that asks a fixed amount per metric and remembers what it was shown."""
    seen: list[list[ledger.Standing]] = []

    def plan(standings: list[ledger.Standing]) -> dict[uuid.UUID, int]:
        seen.append(standings)
        for standing in standings:
            if needs_by_metric[standing.limit.metric] > standing.remaining:
                raise LimitRateExceeded("does not fit", extra={})
        return {s.limit.id: needs_by_metric[s.limit.metric] for s in standings}

    return plan, seen


async def holds(transactions: WriteTransactions) -> dict[uuid.UUID, int]:
    async with transactions.begin() as conn:
        rows = await conn.execute(
            select(LimitHoldRow.limit_id, func.sum(LimitHoldRow.amount)).group_by(LimitHoldRow.limit_id)
        )
        return {row[0]: int(row[1]) for row in rows}


def test_a_call_that_fits_is_held_in_one_statement_with_what_each_limit_had() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            month, minute = limit("cost", "month", 1000), limit("requests", "minute", 5)
            await store(transactions, month, minute, used={month.id: 400})
            plan, seen = asking(cost=100, requests=1)
            needs = await reserve_in_one_statement(
                transactions, [month, minute], plan, "call-1", {"model": "m"}, 30.0
            )
            assert needs == {month.id: 100, minute.id: 1}
            assert [(s.used, s.reserved) for s in seen[-1]] == [(400, 0), (0, 0)]
            assert await holds(transactions) == {month.id: 100, minute.id: 1}

            # The next call decides first on what the first one saw (one round trip), then again on
            # what the function saw, which has the first one's holds reserved.
            plan, seen = asking(cost=100, requests=1)
            assert await reserve_in_one_statement(transactions, [month, minute], plan, "call-2", None, 30.0)
            assert [[(s.used, s.reserved) for s in standings] for standings in seen] == [
                [(400, 0), (0, 0)],
                [(400, 100), (0, 1)],
            ]

    asyncio.run(scenario())


def test_a_hold_that_no_longer_fits_is_decided_again_on_what_the_locked_read_saw() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            month = limit("cost", "month", 1000)
            await store(transactions, month, used={month.id: 300})
            other, _ = asking(cost=600)
            assert await one_statement(transactions, [month], other, "other", None, 30.0)
            shown: list[list[ledger.Standing]] = []

            def stale_first(standings: list[ledger.Standing]) -> dict[uuid.UUID, int]:
                # The first decision asks as if the other call's 600 were not held yet (a read
                # taken before it): the function must refuse to hold it and show what it saw.
                shown.append(standings)
                if len(shown) == 1:
                    return {month.id: 500}
                raise LimitRateExceeded("does not fit", extra={})

            with pytest.raises(LimitRateExceeded):
                await one_statement(transactions, [month], stale_first, "late", None, 30.0)
            # First on what this process saw at its last reservation (before the other call's hold),
            # then on what the function saw under the locks.
            assert [[(s.used, s.reserved) for s in standings] for standings in shown] == [
                [(300, 0)],
                [(300, 600)],
            ]
            assert await holds(transactions) == {month.id: 600}

    asyncio.run(scenario())


def test_a_calendar_window_without_its_counter_is_left_to_the_locked_transaction() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            month = limit("cost", "month", 1000)
            await store(transactions, month, used={})
            plan, _ = asking(cost=1)
            assert await one_statement(transactions, [month], plan, "c", None, 30.0) is None
            assert await holds(transactions) == {}
            # The locked transaction counts the window's records, makes the counter and holds.
            assert await ledger.reserve(
                transactions, [month], plan, call_id="c", call=None, lease_seconds=30.0
            )
            assert await holds(transactions) == {month.id: 1}
            plan, seen = asking(cost=1)
            assert await one_statement(transactions, [month], plan, "d", None, 30.0)
            assert [(s.used, s.reserved) for s in seen[-1]] == [(0, 1)]

    asyncio.run(scenario())


def test_a_hold_decided_on_old_figures_is_undone_when_the_new_ones_decide_otherwise() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            month = limit("cost", "month", 1000)
            await store(transactions, month, used={month.id: 0})

            def half_of_what_is_left(standings: list[ledger.Standing]) -> dict[uuid.UUID, int]:
                # Like an output cap: what a call asks depends on what is left.
                return {s.limit.id: s.remaining // 2 for s in standings}

            assert await one_statement(transactions, [month], half_of_what_is_left, "a", None, 30.0) == {
                month.id: 500
            }
            # On the first call's figures the second asks 500 too and fits; on the function's it asks
            # 250: the 500 is given back and 250 held.
            assert await one_statement(transactions, [month], half_of_what_is_left, "b", None, 30.0) == {
                month.id: 250
            }
            assert await holds(transactions) == {month.id: 750}

    asyncio.run(scenario())
