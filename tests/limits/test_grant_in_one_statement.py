"""PostgreSQL grants an allowance in one statement (migration 0020's `switchboard_grant`), deciding
exactly as the locked transaction does: the same standings, the same number of worst cases, the same
rows, whoever else holds allowances or asks for them back. Always on PostgreSQL: the function exists
only there (the SQLite run of the suite starts the local cluster like every other)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select, update

from switchboard.db.write_transaction import WriteTransactions
from switchboard.limits import allowance_rows
from switchboard.limits.allowance import Allowance
from switchboard.limits.allowances import Allowances
from switchboard.limits.ledger import Standing
from switchboard.limits.models import LimitHoldRow, LimitUsageRow
from switchboard.limits.postgres_reserve import grant_in_one_statement
from switchboard.limits.rules import Limit
from tests.limits.test_reserve_in_one_statement import limit, postgres_ledger, store

OWN = "slot-aaaaaaaaaaaa-"
OTHER = "slot-bbbbbbbbbbbb-"
NAME = f"{OWN}0"

Granted = tuple[list[Standing], int] | None
Grant = Callable[[WriteTransactions, list[Limit], tuple[int, ...], int, int], Awaitable[Granted]]


async def in_one_statement(
    transactions: WriteTransactions, limits: list[Limit], sizes: tuple[int, ...], wanted: int, free: int
) -> Granted:
    share = allowance_rows.SHARE
    return await grant_in_one_statement(transactions, limits, sizes, wanted, NAME, OWN, share, 30.0, free)


async def in_transaction(
    transactions: WriteTransactions, limits: list[Limit], sizes: tuple[int, ...], wanted: int, free: int
) -> Granted:
    return await allowance_rows.grant_in_transaction(transactions, limits, sizes, wanted, NAME, 30.0, free)


async def hold(transactions: WriteTransactions, item: Limit, name: str, amount: int, lease: float) -> None:
    until = datetime.now(UTC) + timedelta(seconds=lease)
    row = {"limit_id": item.id, "call_id": name, "amount": amount, "lease_until": until, "call": None}
    async with transactions.begin() as conn:
        await conn.execute(insert(LimitHoldRow).values(row))


async def rows_of(transactions: WriteTransactions) -> dict[tuple[str, str], int]:
    """Every hold, by (which limit, row name), with the limits named by metric."""
    async with transactions.begin() as conn:
        rows = await conn.execute(select(LimitHoldRow.limit_id, LimitHoldRow.call_id, LimitHoldRow.amount))
        return {(str(row[0]), row[1]): row[2] for row in rows}


# Each case: the holds in place before the grant (limit index, row name, amount, lease seconds), the
# allowance's free worst cases, and what both ways must grant.
CASES: dict[str, tuple[list[tuple[int, str, int, float]], int, int]] = {
    "alone, a share of what is left": ([], 0, 75),
    "another process holds an allowance: half the share, of what it leaves": (
        [(0, f"{OTHER}3", 80_000, 30.0), (0, f"{OTHER}3.7", 0, 30.0)],
        0,
        32,
    ),
    "the allowance's own rows and free part count as its own": (
        [(0, NAME, 20_000, 30.0), (1, NAME, 20, 30.0), (0, f"{NAME}.4", 0, 30.0)],
        20,
        55,  # (580k left + its 20 free) / 8 = 75, less the 20 it has
    ),
    "a running call's hold is left out of what is left": ([(0, "call-x", 200_000, 30.0)], 0, 50),
    "an expired allowance of a dead process is not counted": ([(0, f"{OTHER}1", 500_000, -1.0)], 0, 75),
    "a reclaim marker: nothing": ([(1, "reclaim-bbbbbbbbbbbb", 0, 30.0)], 0, 0),
    "an expired reclaim marker is not counted": ([(1, "reclaim-bbbbbbbbbbbb", 0, -1.0)], 0, 75),
    "too little left for a share: nothing": ([(0, "call-y", 595_000, 30.0)], 0, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_statement_grants_what_the_locked_transaction_grants(case: str) -> None:
    existing, free, expected = CASES[case]

    async def granted_by(way: Grant) -> tuple[list[tuple[int, int]], int, dict[str, int]]:
        async with postgres_ledger() as transactions:
            month, minute = limit("cost", "month", 1_000_000), limit("requests", "minute", 600)
            await store(transactions, month, minute, used={month.id: 400_000})
            limits = [month, minute]
            for index, name, amount, lease in existing:
                await hold(transactions, limits[index], name, amount, lease)
            before = await rows_of(transactions)
            result = await way(transactions, limits, (1000, 1), 256, free)
            assert result is not None
            standings, count = result
            after = await rows_of(transactions)
            metric = {str(month.id): "month", str(minute.id): "minute"}
            added = {
                f"{metric[limit_id]} {name}": amount - before.get((limit_id, name), 0)
                for (limit_id, name), amount in after.items()
                if amount != before.get((limit_id, name), 0)
            }
            return [(s.used, s.reserved) for s in standings], count, added

    async def scenario() -> None:
        by_statement = await granted_by(in_one_statement)
        by_transaction = await granted_by(in_transaction)
        assert by_statement == by_transaction
        _, count, added = by_statement
        assert count == expected
        if count:
            assert added == {f"month {NAME}": count * 1000, f"minute {NAME}": count}
        else:
            assert added == {}

    asyncio.run(scenario())


def test_a_calendar_window_without_its_counter_is_left_to_the_transaction_which_creates_it() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            month = limit("cost", "month", 1_000_000)
            await store(transactions, month, used={})
            assert await in_one_statement(transactions, [month], (1000,), 256, 0) is None
            assert await rows_of(transactions) == {}  # nothing granted

            standings, count = await allowance_rows.grant(transactions, [month], (1000,), 256, NAME, 30.0)
            assert (standings[0].used, count) == (0, 125)
            async with transactions.begin() as conn:
                counters = (await conn.execute(select(LimitUsageRow.limit_id))).scalars().all()
            assert counters == [month.id]
            assert await rows_of(transactions) == {(str(month.id), NAME): 125_000}

    asyncio.run(scenario())


def test_a_rolling_window_counts_what_its_bucket_refilled() -> None:
    async def scenario() -> None:
        results: list[Any] = []
        for way in (in_one_statement, in_transaction):
            async with postgres_ledger() as transactions:
                minute = limit("requests", "minute", 600)
                await store(transactions, minute, used={minute.id: 600})  # spent just now
                async with transactions.begin() as conn:  # ... 30 s ago: half of it refilled
                    earlier = datetime.now(UTC) - timedelta(seconds=30)
                    await conn.execute(update(LimitUsageRow).values(updated_at=earlier))
                result = await way(transactions, [minute], (1,), 256, 0)
                assert result is not None
                results.append((result[0][0].used, result[1]))
        assert results[0] == results[1]
        used, count = results[0]
        assert 299 <= used <= 300 and count == (600 - used) // 8

    asyncio.run(scenario())


async def an_allowance(
    transactions: WriteTransactions, lease_seconds: float = 30.0
) -> tuple[Limit, Allowances, Allowance]:
    """An allowance on a new cost limit of 1,000,000 whose calls' worst case is 1,000: its grant
    is 125 of them (what is left over SHARE), not yet taken."""
    month = limit("cost", "month", 1_000_000)
    await store(transactions, month, used={month.id: 0})
    allowances = Allowances(transactions, lease_seconds=lease_seconds, upkeep_seconds=1.0)
    allowance = allowances.of((month,))
    assert allowance is not None
    allowance.peak = [1000]
    return month, allowances, allowance


def test_a_grant_waits_for_the_settlement_changing_its_allowances_rows() -> None:
    """A settlement changes the allowance's rows (what its calls used, what goes back), in an order
    of its own: a grant at the same time, changing them in another, would deadlock. The settlement
    takes its turn at the allowance (settlement.transaction._allowances_of); the grant waits for it."""

    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            month, allowances, allowance = await an_allowance(transactions)
            async with transactions.rows_locked_here([allowance.name]):  # a settlement in flight
                granting = asyncio.ensure_future(allowances.refill(allowance))
                await asyncio.sleep(0.2)
                assert not granting.done() and await rows_of(transactions) == {}
            await granting
            assert await rows_of(transactions) == {(str(month.id), allowance.name): 125_000}

    asyncio.run(scenario())
