"""A call refused on a limit asks for allowances' free parts back (`Allowances.ask_back`) and learns
whether waiting may help (SPEC §13: no call is refused while the remaining amount covers it).

Calls refused together in one process each ask: the first takes the free part of the process's own
allowance back, the others find nothing left to take. They must wait too, for the room the first
freed; only a process whose allowance has nothing that could free more answers at once. On the
database the suite runs on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from switchboard.limits.allowance import Allowance
from switchboard.limits.allowances import Allowances
from switchboard.limits.rules import Limit
from tests.limits.test_allowance_records import suite_ledger
from tests.limits.test_grant_in_one_statement import an_allowance, rows_of
from tests.support.databases import DatabaseFactory


@asynccontextmanager
async def granted(databases: DatabaseFactory) -> AsyncIterator[tuple[Limit, Allowances, Allowance]]:
    """An idle allowance holding 125 worst cases of 1,000 on a cost limit, nothing drawn."""
    async with suite_ledger(databases) as (_, transactions):
        month, allowances, allowance = await an_allowance(transactions)
        await allowances.refill(allowance)
        assert await rows_of(transactions) == {(str(month.id), allowance.name): 125_000}
        yield month, allowances, allowance


def test_calls_refused_together_all_wait_for_the_room_the_first_of_them_freed(
    databases: DatabaseFactory,
) -> None:
    async def scenario() -> None:
        async with granted(databases) as (month, allowances, allowance):
            first = await allowances.ask_back((month,))
            assert first  # it gave the free part back: a try again may fit
            assert allowance.granted == [0]
            # Refused beside it, before its part was back: nothing left to give, and yet waiting helps.
            assert await allowances.ask_back((month,))
            assert await allowances.ask_back((month,))

    asyncio.run(scenario())


def test_a_process_whose_allowance_can_free_nothing_more_answers_at_once(databases: DatabaseFactory) -> None:
    async def scenario() -> None:
        async with granted(databases) as (month, allowances, allowance):
            assert await allowances.ask_back((month,))
            # Long after that, with no call running on it and no grant under way: nothing will come.
            allowance.freed_at = time.monotonic() - allowances.patience - 1
            assert not await allowances.ask_back((month,))

    asyncio.run(scenario())


def test_a_process_whose_allowance_has_calls_running_waits_for_them(databases: DatabaseFactory) -> None:
    async def scenario() -> None:
        async with granted(databases) as (month, allowances, allowance):
            assert allowance.take([1000], lambda: {"call_id": "c1"}) is not None
            allowance.started()
            assert await allowances.ask_back((month,))  # the free part, less the running call's
            assert allowance.granted == [1000]
            allowance.freed_at = time.monotonic() - allowances.patience - 1
            assert await allowances.ask_back((month,))  # its settlement may leave room

    asyncio.run(scenario())
