"""A process's callers take turns at rows before their transaction locks them (`rows_locked_here`):
one at a time per key, in the keys' sorted order whatever order they are given in, and nothing is
kept once nobody holds or waits for a key (keys come and go: allowances are named anew each time).
On PostgreSQL: SQLite has one write lock for the whole file, and nothing to take turns at."""

from __future__ import annotations

import asyncio

from tests.limits.test_reserve_in_one_statement import postgres_ledger


def test_callers_take_turns_per_key_in_any_order_and_nothing_is_kept_after() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            seen: list[str] = []
            first_in = asyncio.Event()
            let_go = asyncio.Event()

            async def first() -> None:
                async with transactions.rows_locked_here(["a", "b"]):
                    seen.append("first in")
                    first_in.set()
                    await let_go.wait()
                    seen.append("first out")

            async def second() -> None:
                await first_in.wait()
                async with transactions.rows_locked_here(["b", "a"]):  # reversed: no deadlock
                    seen.append("second in")

            async def elsewhere() -> None:
                await first_in.wait()
                async with transactions.rows_locked_here(["c"]):
                    seen.append("other key in")

            tasks = [asyncio.ensure_future(step()) for step in (first, second, elsewhere)]
            await first_in.wait()
            for _ in range(20):
                await asyncio.sleep(0)
            assert seen == ["first in", "other key in"]  # the second waits; another key does not
            let_go.set()
            await asyncio.gather(*tasks)
            assert seen == ["first in", "other key in", "first out", "second in"]
            assert transactions._row_locks == {}  # what the process keeps

    asyncio.run(scenario())


def test_a_waiter_cancelled_in_its_wait_leaves_the_turns_as_they_were() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            held = asyncio.Event()
            let_go = asyncio.Event()

            async def holder() -> None:
                async with transactions.rows_locked_here(["a"]):
                    held.set()
                    await let_go.wait()

            async def waiter() -> None:
                async with transactions.rows_locked_here(["a"]):
                    raise AssertionError("a cancelled waiter never gets its turn")

            holding = asyncio.ensure_future(holder())
            await held.wait()
            waiting = asyncio.ensure_future(waiter())
            for _ in range(5):
                await asyncio.sleep(0)
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
            let_go.set()
            await holding
            async with transactions.rows_locked_here(["a"]):  # free again
                pass
            assert transactions._row_locks == {}

    asyncio.run(scenario())


def test_a_waiter_cancelled_after_its_first_turn_gives_that_turn_back() -> None:
    async def scenario() -> None:
        async with postgres_ledger() as transactions:
            held, let_go, third_in = asyncio.Event(), asyncio.Event(), asyncio.Event()

            async def holder() -> None:
                async with transactions.rows_locked_here(["b"]):
                    held.set()
                    await let_go.wait()

            async def waiter() -> None:
                async with transactions.rows_locked_here(["b", "a"]):  # takes "a", then waits for "b"
                    raise AssertionError("a cancelled waiter never gets its turn")

            async def third() -> None:
                async with transactions.rows_locked_here(["a"]):
                    third_in.set()

            holding = asyncio.ensure_future(holder())
            await held.wait()
            waiting = asyncio.ensure_future(waiter())
            for _ in range(5):
                await asyncio.sleep(0)
            queued = asyncio.ensure_future(third())  # behind the waiter, for "a"
            for _ in range(5):
                await asyncio.sleep(0)
            assert not third_in.is_set()
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
            async with asyncio.timeout(5):
                await queued  # "a" came back at once, while "b" is still held
            assert transactions._row_locks["b"].lock.locked()
            let_go.set()
            await holding
            assert transactions._row_locks == {}

    asyncio.run(scenario())
