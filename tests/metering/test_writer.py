"""The usage writer: group commit, committed-before-return, backpressure, drain on shutdown."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.metering.economies import economy_id_for
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.writer import UsageWriter
from switchboard.settlement.writer import usage_writer
from tests.conftest import GatewayFactory
from tests.metering.conftest import EconomyFactory, count_records, make_outcome, record, usage_table_locked
from tests.support.gateway import Gateway, User

DEFAULT = economy_id_for("default")


async def _count(session: AsyncSession, user_id: uuid.UUID) -> int:
    query = select(func.count()).select_from(UsageRecordRow).where(UsageRecordRow.user_id == user_id)
    return int(await session.scalar(query) or 0)


def test_concurrent_calls_share_a_few_transactions_and_every_record_is_stored(
    metering_gateway: Gateway,
) -> None:
    writer: UsageWriter = metering_gateway.app.state.call_sink
    user_id = uuid.uuid4()
    batches_before = writer.batches
    record(metering_gateway, [make_outcome(DEFAULT, user_id) for _ in range(300)])
    assert count_records(metering_gateway, user_id=user_id) == 300
    # One transaction per call would be 300; the queue fills while a batch commits.
    assert writer.batches - batches_before <= 10


def test_record_returns_only_once_the_record_is_committed(metering_gateway: Gateway) -> None:
    app = metering_gateway.app
    user_id = uuid.uuid4()

    async def scenario() -> tuple[bool, int, int]:
        async with usage_table_locked(app):
            pending = asyncio.create_task(app.state.call_sink.record(make_outcome(DEFAULT, user_id)))
            await asyncio.sleep(0.5)
            returned_while_locked = pending.done()
        await pending
        # Right after record() returns, another connection sees the row.
        async with app.state.sessionmaker() as session:
            after = await _count(session, user_id)
        for _ in range(20):
            user = uuid.uuid4()
            await app.state.call_sink.record(make_outcome(DEFAULT, user))
            async with app.state.sessionmaker() as session:
                if await _count(session, user) != 1:
                    return returned_while_locked, after, 0
        return returned_while_locked, after, 1

    assert metering_gateway.server.call_soon(scenario()) == (False, 1, 1)


def test_a_caller_cancelled_while_waiting_still_gets_its_record(metering_gateway: Gateway) -> None:
    app = metering_gateway.app
    user_id = uuid.uuid4()

    async def scenario() -> bool:
        async with usage_table_locked(app):
            pending = asyncio.create_task(app.state.call_sink.record(make_outcome(DEFAULT, user_id)))
            await asyncio.sleep(0.1)
            pending.cancel()  # e.g. the client went away while its record was being written
            await asyncio.sleep(0.1)
        return pending.cancelled()

    assert metering_gateway.server.call_soon(scenario()) is True
    deadline = time.monotonic() + 10
    while count_records(metering_gateway, user_id=user_id) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert count_records(metering_gateway, user_id=user_id) == 1


def test_a_full_queue_makes_callers_wait_and_loses_nothing(metering_gateway: Gateway) -> None:
    app = metering_gateway.app
    user_id = uuid.uuid4()

    async def scenario() -> tuple[int, int]:
        writer = usage_writer(app.state.sessionmaker, {}, queue_size=2, max_batch=2)
        writer.start()
        try:
            async with usage_table_locked(app):
                outcomes = [make_outcome(DEFAULT, user_id) for _ in range(10)]
                calls = [asyncio.create_task(writer.record(o)) for o in outcomes]
                await asyncio.sleep(0.3)
                waiting = sum(not call.done() for call in calls)
            await asyncio.gather(*calls)
            return waiting, writer.records
        finally:
            await writer.close()

    waiting, written = metering_gateway.server.call_soon(scenario())
    assert (waiting, written) == (10, 10)
    assert count_records(metering_gateway, user_id=user_id) == 10


def test_a_clean_shutdown_writes_every_queued_record(make_gateway: GatewayFactory) -> None:
    gateway = make_gateway()
    app = gateway.app
    user_id = uuid.uuid4()
    held: dict[str, Any] = {}
    released = asyncio.Event()

    async def hold_and_queue() -> None:
        async def hold() -> None:
            async with usage_table_locked(app):
                held["locked"] = True
                await released.wait()

        held["task"] = asyncio.create_task(hold())
        while "locked" not in held:
            await asyncio.sleep(0.01)
        held["calls"] = [
            asyncio.create_task(app.state.call_sink.record(make_outcome(DEFAULT, user_id)))
            for _ in range(1000)
        ]

    async def release() -> None:
        released.set()

    gateway.server.call_soon(hold_and_queue())
    # Conditions, not time: the records are queued behind the lock before the shutdown begins, and the
    # writer is seen closing however long a loaded machine takes to get there (the bound only stops a hang).
    deadline = time.monotonic() + 120
    while "calls" not in held and time.monotonic() < deadline:
        time.sleep(0.01)
    gateway.server.server.should_exit = True  # begin a clean shutdown while records wait
    writer: UsageWriter = app.state.call_sink
    while not writer.closing and time.monotonic() < deadline:
        time.sleep(0.01)
    assert writer.closing and writer.records < 1000
    gateway.server.call_soon(release())
    gateway.stop()

    async def count() -> int:
        from switchboard.db.engine import make_engine

        engine = make_engine(gateway.settings.database_url)
        try:
            async with AsyncSession(engine) as session:
                return await _count(session, user_id)
        finally:
            await engine.dispose()

    assert asyncio.run(count()) == 1000


def test_error_and_cancelled_calls_are_recorded_with_their_status(metering_gateway: Gateway) -> None:
    user = metering_gateway.user()
    record(
        metering_gateway,
        [
            make_outcome(
                DEFAULT,
                user.id,
                status="error",
                error_code="upstream_failed",
                prompt_tokens=0,
                completion_tokens=0,
                ttft_ms=None,
                request_id="req-error",
            ),
            make_outcome(
                DEFAULT,
                user.id,
                status="cancelled",
                stream=True,
                prompt_tokens=1000,
                completion_tokens=100,
                request_id="req-cancelled",
            ),
        ],
    )
    records = {r["request_id"]: r for r in user.client.get("/usage/me").json()["data"]}
    error, cancelled = records["req-error"], records["req-cancelled"]
    assert (error["status"], error["error_code"], error["cost"], error["priced"]) == (
        "error",
        "upstream_failed",
        "0",
        True,
    )
    # 1000 x 0.15 + 100 x 0.60 per million tokens = 0.00021 USD
    assert (cancelled["status"], cancelled["stream"], cancelled["cost"]) == ("cancelled", True, "210000")


def test_record_ids_are_generated_here_never_taken_from_the_call(metering_gateway: Gateway) -> None:
    user = metering_gateway.user()
    twice = [make_outcome(DEFAULT, user.id, request_id="same", idempotency_key="k") for _ in range(2)]
    record(metering_gateway, twice)
    ids = [r["id"] for r in user.client.get("/usage/me").json()["data"]]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(uuid.UUID(i).version == 7 for i in ids)


def test_a_record_keeps_the_prices_and_markup_it_was_costed_with(metering_gateway: Gateway) -> None:
    user = metering_gateway.user()
    record(
        metering_gateway,
        [
            make_outcome(economy_id_for("team"), user.id, request_id="team"),
            make_outcome(DEFAULT, user.id, model="no-such-model-anywhere", request_id="unpriced"),
        ],
    )
    records = {r["request_id"]: r for r in user.client.get("/usage/me").json()["data"]}
    team, unpriced = records["team"], records["unpriced"]
    assert {
        k: team[k]
        for k in ("cost", "priced", "input_per_mtok", "output_per_mtok", "markup_bps", "price_source")
    } == {
        "cost": "2750000",
        "priced": True,
        "input_per_mtok": "1.10",
        "output_per_mtok": "2.20",
        "markup_bps": 2500,
        "price_source": "override",
    }
    assert (unpriced["cost"], unpriced["priced"], unpriced["input_per_mtok"]) == ("0", False, None)


def test_a_reservations_prices_from_memory_follow_a_changed_markup(
    metering_gateway: Gateway, make_economy: EconomyFactory, admin: User
) -> None:
    """A limit's reservation takes its prices and markup without an await while the price book keeps
    them fresh; an admin's change moves the resolution cache's generation, which sends the next
    reservation to the database (as the records' own costing does), so it cannot price a call stale."""
    writer: UsageWriter = metering_gateway.app.state.call_sink
    economy = make_economy(markup_bps=100)
    economy_id = uuid.UUID(economy["id"])

    async def read() -> tuple[Any, Any]:
        found = await writer.price_of(economy_id, "openai", "gpt-4o-mini")
        return found, writer.kept_price_of(economy_id, "openai", "gpt-4o-mini")

    found, kept = metering_gateway.server.call_soon(read())
    assert kept == found and found[1] == 100
    assert admin.client.patch(f"/economies/{economy['id']}", json={"markup_bps": 300}).status_code == 200
    assert writer.kept_price_of(economy_id, "openai", "gpt-4o-mini") is None
    found, kept = metering_gateway.server.call_soon(read())
    assert kept == found and found[1] == 300
