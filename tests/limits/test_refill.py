"""A busy spell's last settlement gives its process's allowance back whole (SPEC §13: `reserved` is 0
once the last answer is out); the next call takes a grant again at once (`Allowances.refills`). Only
after a busy spell, one that had BUSY calls in flight, or a quiet spell less than IDLE_SECONDS after
one (a busy process is at times down to one call in flight): after calls one at a time, the next call
reserves on its own, one transaction where a grant, a records row and a give-back take more."""

from __future__ import annotations

import asyncio
import time

from switchboard.limits.allowance import BUSY, IDLE_SECONDS, Allowance
from switchboard.limits.allowances import Allowances
from tests.limits.test_allowance_records import suite_ledger
from tests.limits.test_grant_in_one_statement import an_allowance
from tests.support.databases import DatabaseFactory


def spell(allowance: Allowance, calls: int, *, on_allowance: bool = True) -> None:
    """`calls` calls under the allowance's limits, all in flight at once, then all settled: admitted
    on the allowance, or each on a reservation of its own."""
    flights = [
        allowance.take([1000], lambda: {"call_id": "c"}) if on_allowance else None for _ in range(calls)
    ]
    assert all(flight is not None for flight in flights) == on_allowance
    for _ in flights:
        allowance.started(None if on_allowance else [1000])
    for flight in flights:
        allowance.settling()
        allowance.ended(flight, [1000])


def refills_now(allowances: Allowances, allowance: Allowance) -> bool:
    """`refills`, whatever the grant before found: a grant of fewer than half the worst cases asked
    for (this limit's share) holds the next one back for a tick, which is not what is asked here."""
    allowance.grant_after = 0.0
    return allowances.refills(allowance)


def test_after_a_busy_spell_the_next_call_takes_a_grant_and_after_quiet_ones_only_it_does_not(
    databases: DatabaseFactory,
) -> None:
    async def scenario() -> None:
        async with suite_ledger(databases) as (_, transactions):
            _, allowances, allowance = await an_allowance(transactions)
            await allowances.refill(allowance)

            spell(allowance, BUSY)
            assert allowance.granted == [0]  # given back whole by the last settlement
            assert refills_now(allowances, allowance)  # busy: the next call takes a grant at once
            await allowances.refill(allowance)

            spell(allowance, 1)  # a busy process down to one call in flight for a moment
            assert allowance.granted == [0]
            assert refills_now(allowances, allowance)
            await allowances.refill(allowance)

            allowance.busy_ended = time.monotonic() - IDLE_SECONDS  # the busy spell is a second old
            spell(allowance, 1)
            assert allowance.granted == [0]
            assert not refills_now(allowances, allowance)  # one at a time: it reserves on its own

            spell(allowance, BUSY - 1, on_allowance=False)  # as without an allowance
            assert not refills_now(allowances, allowance)

    asyncio.run(scenario())
