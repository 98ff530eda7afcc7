"""Per-process allowances (SPEC §13, limits/allowances.py): a busy process is granted an allowance (a
hold of some worst cases on each limit, named `slot-<process>-<n>`) and admits calls against it in
memory; their settlements draw what they used from it.

Real gateway processes on one database; the fake provider holds every admitted call until the test
releases it, so what was admitted never depends on timing. The allowances are read straight from the
`limit_holds` table: `reserved` counts them like any hold.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from switchboard.db.engine import make_engine
from switchboard.idempotency.models import IN_FLIGHT, IdempotencyRecord
from switchboard.limits.allowance_rows import listed_calls
from switchboard.limits.models import LimitHoldRow
from switchboard.settings import load_settings
from tests.limits.test_replicas import (
    ACTUAL,
    HOLD,
    MAX_TOKENS,
    MESSAGES,
    limit_status,
    priced_config,
    setup_caller,
    tokens,
    wave,
)
from tests.observability.samples import Samples, parse
from tests.support.databases import DatabaseFactory
from tests.support.recorder import tls_context
from tests.support.served import gateway_processes, served_env


@contextmanager
def gateways(
    databases: DatabaseFactory, tmp_path: Path, config: dict[str, Any], count: int, lease: str = "3"
) -> Iterator[tuple[list[Any], list[str], str]]:
    """`count` gateway processes on one new database: their processes, URLs and the database's URL."""
    env = served_env(
        databases, tmp_path, config, SWITCHBOARD_LEASE_SECONDS=lease, SWITCHBOARD_LIMIT_ALLOWANCES="1"
    )
    with gateway_processes(env, [tmp_path / f"{n}.log" for n in range(count)]) as started:
        yield [p for p, _ in started], [u for _, u in started], env["SWITCHBOARD_DATABASE_URL"]


T = TypeVar("T")


def on_database(database_url: str, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """`work` in a transaction of its own on the gateways' database, on a thread of its own: the
    tests call it from inside their own event loop too."""

    async def run() -> T:
        engine = make_engine(database_url)
        try:
            async with engine.begin() as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result()


def holds(database_url: str) -> list[tuple[str, str, int, Any]]:
    """Every hold row: (limit id, name, amount, the call's record)."""

    async def read(conn: AsyncConnection) -> list[tuple[str, str, int, Any]]:
        rows = await conn.execute(
            select(LimitHoldRow.limit_id, LimitHoldRow.call_id, LimitHoldRow.amount, LimitHoldRow.call)
        )
        return [(str(limit_id), name, amount, call) for limit_id, name, amount, call in rows]

    return on_database(database_url, read)


def allowance_rows(database_url: str, limit_id: str) -> dict[str, int]:
    """A limit's allowances: name -> amount (not the rows of running calls' records)."""
    return {
        name: amount
        for lid, name, amount, call in holds(database_url)
        if lid == limit_id and name.startswith("slot-") and call is None
    }


def recorded_calls(database_url: str) -> list[tuple[str, int, Any]]:
    """The records running calls on allowances left, on the rows they share with the calls that
    started with them: (row, its amount, one call's record)."""
    return [
        (name, amount, record)
        for _, name, amount, call in holds(database_url)
        if name.startswith("slot-") and call is not None
        for record in listed_calls(call)
    ]


def wait_for(condition: Any, what: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def limited_config(
    fake_provider: Any, models: list[str], cost: int, requests: int = 100_000
) -> dict[str, Any]:
    config = priced_config(fake_provider, models)
    economy = {"subject_type": "economy", "subject_id": "default"}
    config["limits"] = [
        {**economy, "metric": "cost", "window": "total", "amount": str(cost)},
        {**economy, "metric": "requests", "window": "minute", "amount": str(requests)},
    ]
    return config


def limit_ids(url: str, admin: str) -> dict[str, str]:
    listed = httpx.get(
        f"{url}/limits",
        params={"subject_type": "economy"},
        headers={"authorization": f"Bearer {admin}"},
        verify=tls_context(),
    )
    assert listed.status_code == 200, listed.text
    return {item["metric"]: item["id"] for item in listed.json()["data"]}


async def start_held(
    url: str, user: str, model: str, count: int, fake_provider: Any
) -> list[asyncio.Task[httpx.Response]]:
    """`count` concurrent calls, returned once every one has reached the (holding) provider."""
    client = httpx.AsyncClient(base_url=url, headers={"authorization": f"Bearer {user}"}, timeout=60)
    body = {"model": f"openai/{model}", "messages": MESSAGES, "max_tokens": MAX_TOKENS}
    tasks = [asyncio.create_task(client.post("/v1/chat/completions", json=body)) for _ in range(count)]
    deadline = time.monotonic() + 60
    while len(fake_provider.received(model)) < count:
        early = [t.result().text for t in tasks if t.done() and not t.exception()]
        assert not early and time.monotonic() < deadline, f"the calls never reached the provider: {early}"
        await asyncio.sleep(0.05)
    tasks.append(asyncio.create_task(_close_later(client, tasks)))
    return tasks


async def _close_later(
    client: httpx.AsyncClient, tasks: list[asyncio.Task[httpx.Response]]
) -> httpx.Response:
    try:
        return (await asyncio.gather(*tasks[:-1]))[0]
    finally:
        await client.aclose()


async def busy_with_an_allowance(
    url: str, user: str, model: str, fake_provider: Any, database: str, ids: dict[str, str]
) -> tuple[list[asyncio.Task[httpx.Response]], int]:
    """Six held calls: the process takes an allowance. Returns them and the cost limit's per-call
    holds (the calls admitted before the grant)."""
    calls = await start_held(url, user, model, 6, fake_provider)
    wait_for(lambda: allowance_rows(database, ids["cost"]), "no allowance was granted")
    return calls, per_call_holds(database, ids["cost"])


def metrics(url: str, admin: str) -> Samples:
    response = httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {admin}"}, verify=tls_context())
    assert response.status_code == 200, response.text
    return parse(response.text)


def per_call_holds(database_url: str, limit_id: str) -> int:
    return sum(
        1
        for lid, name, _, _ in holds(database_url)
        if lid == limit_id and not name.startswith(("slot-", "reclaim-"))
    )


def steady(url: str, admin: str, database: str, limit_id: str) -> tuple[dict[str, Any], dict[str, int]]:
    """A limit's status and its allowances, read while no grant changed them (the same status on
    both sides of the read of the allowances)."""
    found: list[tuple[dict[str, Any], dict[str, int]]] = []

    def read() -> bool:
        status = limit_status(url, admin, limit_id)
        found[:] = [(status, allowance_rows(database, limit_id))]
        return status == limit_status(url, admin, limit_id)

    wait_for(read, "the allowances never stopped changing")
    return found[0]


def test_a_busy_process_is_granted_an_allowance_its_calls_draw_from_and_returns_it_when_idle(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    first, second = f"busy1-{uuid.uuid4().hex[:8]}", f"busy2-{uuid.uuid4().hex[:8]}"
    for model in (first, second):
        fake_provider.script(model, held=True)
    user, admin = tokens()
    amount = 200 * HOLD
    config = limited_config(fake_provider, [first, second], amount)
    # The default lease (30 s): an allowance that goes back before it could run out went back by design.
    with gateways(databases, tmp_path, config, 1, lease="30") as (_, [url], database):
        setup_caller(url, user, admin, fake_provider, None)
        ids = limit_ids(url, admin)

        async def run() -> None:
            wave1 = await start_held(url, user, first, 4, fake_provider)
            # The fourth call in flight asks for an allowance, in the background: at most what is
            # left over 8 (one process holds one): (200 - the four calls' holds) / 8 = 24 worst cases.
            granted = wait_for(lambda: allowance_rows(database, ids["cost"]), "no allowance was granted")
            assert list(granted.values()) == [(amount - 4 * HOLD) // (8 * HOLD) * HOLD] == [24 * HOLD]
            assert list(allowance_rows(database, ids["requests"]).values()) == [24]  # one request a call
            assert per_call_holds(database, ids["cost"]) == 4
            assert int(limit_status(url, admin, ids["cost"])["reserved"]) == (4 + 24) * HOLD

            # Six more calls are admitted on it: no hold of their own. (With room for fewer than 128
            # calls, the process may be granted a few more: `reserved` is the four holds and the
            # allowance.)
            wave2 = await start_held(url, user, second, 6, fake_provider)
            assert per_call_holds(database, ids["cost"]) == 4
            # Each left its record for recovery before the provider was called (the calls starting
            # together on one row), naming the id its usage record will have.
            assert len(recorded_calls(database)) == 6
            assert all(record["record_id"] for _, _, record in recorded_calls(database))
            status, before = steady(url, admin, database, ids["cost"])
            assert int(status["reserved"]) == 4 * HOLD + sum(before.values())
            fake_provider.release(second)
            assert all(r.status_code == 200 for r in await asyncio.gather(*wave2))
            # Each settlement drew what its call cost from the allowance: its worst case is free again.
            wait_for(
                lambda: limit_status(url, admin, ids["cost"])["used"] == str(6 * ACTUAL),
                "the allowance's calls were never settled",
            )
            status, after = steady(url, admin, database, ids["cost"])
            assert after == {name: held - 6 * ACTUAL for name, held in before.items()}
            assert int(status["reserved"]) == 4 * HOLD + sum(after.values())
            # Their rows go at the next upkeep, once every call on them has settled.
            wait_for(lambda: not recorded_calls(database), "the settled calls' record rows stayed", 10)

            fake_provider.release(first)
            assert all(r.status_code == 200 for r in await asyncio.gather(*wave1))

        asyncio.run(run())
        # What an operator sees of it: four calls reserved on their own, six admitted on the allowance.
        seen = metrics(url, admin)
        assert seen.value("switchboard_limit_admissions_total", path="reservation") == 4
        assert seen.value("switchboard_limit_admissions_total", path="allowance") == 6
        assert seen.value("switchboard_limit_allowance_grants_total") >= 1
        # The last call's settlement gave the whole allowance back, committed before its answer went
        # out: `reserved` is 0 as soon as the last answer is produced (SPEC §13), on every limit.
        final = limit_status(url, admin, ids["cost"])
        assert (final["used"], final["reserved"]) == (str(10 * ACTUAL), "0")
        assert limit_status(url, admin, ids["requests"])["reserved"] == "0"  # a bucket: `used` refills
        for metric in ("cost", "requests"):
            assert set(allowance_rows(database, ids[metric]).values()) <= {0}
        # No call for a second: the empty rows go too, well before their 30 s lease could run out.
        wait_for(lambda: not holds(database), "holds were left behind", 20)


def test_shutdown_returns_the_allowance_once_its_calls_settled(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    model = f"shut-{uuid.uuid4().hex[:8]}"
    fake_provider.script(model, held=True)
    user, admin = tokens()
    config = limited_config(fake_provider, [model], 200 * HOLD)
    with gateways(databases, tmp_path, config, 1, lease="30") as ([process], [url], database):
        setup_caller(url, user, admin, fake_provider, None)
        ids = limit_ids(url, admin)

        async def run() -> None:
            calls = await start_held(url, user, model, 6, fake_provider)
            wait_for(lambda: allowance_rows(database, ids["cost"]), "no allowance was granted")
            # Calls are in flight: the allowance is not idle. The process is asked to stop, its calls end.
            process.send_signal(signal.SIGINT)
            await asyncio.sleep(0.5)
            fake_provider.release(model)
            await asyncio.gather(*calls, return_exceptions=True)

        asyncio.run(run())
        process.wait(timeout=60)
        # No process is left to sweep expired rows: the stopping process gave its allowance back itself.
        assert not holds(database)


def test_two_processes_spend_the_amount_to_the_last_call_that_fits(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """Both processes hold allowances; at the limit's end they shrink to none, a process refused
    while the other holds a free part asks for it back, and every call the amount covers runs."""
    first, second = f"edge1-{uuid.uuid4().hex[:8]}", f"edge2-{uuid.uuid4().hex[:8]}"
    for model in (first, second):
        fake_provider.script(model, held=True)
    user, admin = tokens()
    amount = 50 * HOLD
    with gateways(databases, tmp_path, limited_config(fake_provider, [first, second], amount), 2) as (
        _,
        urls,
        database,
    ):
        setup_caller(urls[0], user, admin, fake_provider, None)
        ids = limit_ids(urls[0], admin)
        counts = asyncio.run(wave(urls, user, first, 40, fake_provider))
        assert counts == {200: 40}
        left = amount - 40 * ACTUAL
        counts = asyncio.run(wave(urls, user, second, 60, fake_provider))
        assert counts == {200: left // HOLD, 402: 60 - left // HOLD}  # no call refused that fit
        settled = wait_for(
            lambda: (s := limit_status(urls[1], admin, ids["cost"]))["reserved"] == "0" and s,
            "the allowances never went back",
        )
        assert int(settled["used"]) == (40 + left // HOLD) * ACTUAL <= amount
        # Reclaim markers (amount 0) run out with their lease, and are swept.
        wait_for(lambda: not holds(database), "holds were left behind")


def test_a_killed_process_allowance_expires_and_its_calls_on_it_are_recorded_abandoned(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    first, second = f"dead1-{uuid.uuid4().hex[:8]}", f"dead2-{uuid.uuid4().hex[:8]}"
    after = f"after-{uuid.uuid4().hex[:8]}"
    for model in (first, second, after):
        fake_provider.script(model, held=True)
    user, admin = tokens()
    amount = 60 * HOLD
    config = limited_config(fake_provider, [first, second, after], amount)
    with gateways(databases, tmp_path, config, 2) as (processes, urls, database):
        setup_caller(urls[0], user, admin, fake_provider, None)
        ids = limit_ids(urls[0], admin)

        async def run() -> None:
            calls, own = await busy_with_an_allowance(urls[0], user, first, fake_provider, database, ids)
            calls += await start_held(urls[0], user, second, 2, fake_provider)
            assert per_call_holds(database, ids["cost"]) == own  # both on the allowance
            # Each call on the allowance left its record (on a row of amount 0) before the provider
            # was called: killed at once, well within an upkeep interval, none is lost.
            assert len(recorded_calls(database)) == 8 - own
            assert all(amount == 0 and call for _, amount, call in recorded_calls(database))
            os.kill(processes[0].pid, signal.SIGKILL)
            results = await asyncio.gather(*calls, return_exceptions=True)
            assert all(
                isinstance(r, httpx.TransportError) for r in results if not isinstance(r, httpx.Response)
            )

        asyncio.run(run())
        assert processes[0].wait(timeout=10) == -signal.SIGKILL
        fake_provider.release(first)
        fake_provider.release(second)
        # The lease (3 s) runs out: the other process frees everything the dead one held.
        wait_for(lambda: not holds(database), "the dead process's holds and allowance never expired")
        headers = {"authorization": f"Bearer {user}"}
        records = httpx.get(
            f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers, verify=tls_context()
        ).json()["data"]
        dead = [(r["status"], r["error_code"]) for r in records if r["model"] in (first, second)]
        assert dead == [("abandoned", "gateway_crashed")] * 8
        assert limit_status(urls[1], admin, ids["cost"])["used"] == "0"
        # The whole amount is the other process's to spend.
        counts = asyncio.run(wave(urls[1:], user, after, 70, fake_provider))
        assert counts == {200: amount // HOLD, 402: 70 - amount // HOLD}


def test_a_call_on_an_allowance_killed_in_a_later_attempt_is_recorded_with_that_attempt(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """Its record shares a row with the calls that started with it: moving on to the fallback
    rewrites that row, and the `abandoned` record names attempt 2 and the second model."""
    busy, first, second = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("busy", "first", "second"))
    fake_provider.script(busy, held=True)
    fake_provider.script(first, fail="server_error")
    fake_provider.script(second, held=True)
    user, admin = tokens()
    config = limited_config(fake_provider, [busy, first, second], 60 * HOLD)
    config["fallbacks"] = {f"openai/{first}": [f"openai/{second}"]}
    with gateways(databases, tmp_path, config, 2) as (processes, urls, database):
        setup_caller(urls[0], user, admin, fake_provider, None)
        ids = limit_ids(urls[0], admin)

        async def run() -> None:
            calls, own = await busy_with_an_allowance(urls[0], user, busy, fake_provider, database, ids)
            calls += await start_held(urls[0], user, first, 1, fake_provider)
            wait_for(lambda: fake_provider.received(second), "the call never fell back")
            assert per_call_holds(database, ids["cost"]) == own  # on the allowance
            moved = wait_for(
                lambda: [r for _, _, r in recorded_calls(database) if r["model"] == second],
                "the row of the call's record never named its second attempt",
                10,
            )
            assert [(r["attempt"], r["model"]) for r in moved] == [(2, second)]
            assert not [r for _, _, r in recorded_calls(database) if r["model"] == first]
            os.kill(processes[0].pid, signal.SIGKILL)
            await asyncio.gather(*calls, return_exceptions=True)

        asyncio.run(run())
        assert processes[0].wait(timeout=10) == -signal.SIGKILL
        fake_provider.release(busy)
        fake_provider.release(second)
        wait_for(lambda: not holds(database), "the dead process's rows never expired")
        headers = {"authorization": f"Bearer {user}"}
        records = httpx.get(
            f"{urls[1]}/usage/me", params={"limit": 500}, headers=headers, verify=tls_context()
        ).json()["data"]
        assert [(r["status"], r["attempt"]) for r in records if r["model"] == second] == [("abandoned", 2)]
        assert [(r["status"], r["attempt"]) for r in records if r["model"] == first] == [("error", 1)]
        assert [r["status"] for r in records if r["model"] == busy] == ["abandoned"] * 6


def leave_row(database_url: str, limit_id: str, name: str, records: list[dict[str, Any]]) -> None:
    """A row of running calls' records as a dead process leaves it: its lease already run out."""
    row = {
        "limit_id": uuid.UUID(limit_id),
        "call_id": name,
        "amount": 0,
        "lease_until": datetime.now(UTC) - timedelta(seconds=1),
        "call": {"calls": records},
    }
    on_database(database_url, lambda conn: conn.execute(LimitHoldRow.__table__.insert().values(row)))


def listed_record(settled: dict[str, Any], model: str, record_id: str) -> dict[str, Any]:
    """A running call's record for recovery, as a row lists it, for a call like `settled` (a usage record)."""
    fields = ("request_id", "economy_id", "user_id", "credential_id", "provider", "model", "endpoint")
    return {
        **{name: settled[name] for name in fields},
        "selector": settled.get("selector") or f"openai/{model}",
        "credential_scope": settled.get("credential_scope") or "user",
        "stream": False,
        "status": "abandoned",
        "error_code": "gateway_crashed",
        "attempt": 1,
        "call_id": uuid.uuid4().hex,
        "record_id": record_id,
    }


@contextmanager
def one_settled_call(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> Iterator[tuple[str, str, str, dict[str, str], Any]]:
    """A gateway that settled one call under the limits: its URL, database, model, limit ids, and
    the caller's usage records of that model (a function)."""
    model = f"quick-{uuid.uuid4().hex[:8]}"
    user, admin = tokens()
    config = limited_config(fake_provider, [model], 60 * HOLD)
    with gateways(databases, tmp_path, config, 1) as (_, [url], database):
        setup_caller(url, user, admin, fake_provider, None)
        ids = limit_ids(url, admin)
        headers = {"authorization": f"Bearer {user}"}
        body = {"model": f"openai/{model}", "messages": MESSAGES, "max_tokens": MAX_TOKENS}
        answered = httpx.post(
            f"{url}/v1/chat/completions", json=body, headers=headers, timeout=60, verify=tls_context()
        )
        assert answered.status_code == 200, answered.text

        def usage() -> list[dict[str, Any]]:
            found = httpx.get(
                f"{url}/usage/me", params={"limit": 500}, headers=headers, verify=tls_context()
            ).json()["data"]
            return [r for r in found if r["model"] == model]

        yield url, database, model, ids, usage


def test_recovery_writes_each_call_of_a_dead_row_once_and_none_for_a_call_that_settled(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """A row lists the calls that started together; some may have settled before their process died.
    Each listed record names its call's usage record id: recovery writes an `abandoned` record under
    it unless that id is stored, so a settled call keeps its one `ok` record."""
    with one_settled_call(databases, fake_provider, tmp_path) as (_, database, model, ids, usage):
        [settled] = usage()
        lost = str(uuid.uuid4())
        row = "slot-0123456789ab-r0"
        leave_row(
            database,
            ids["cost"],
            row,
            [listed_record(settled, model, settled["id"]), listed_record(settled, model, lost)],
        )
        wait_for(lambda: len(usage()) == 2 and not holds(database), "the dead row was never recovered")
        assert sorted((r["id"], r["status"]) for r in usage()) == sorted(
            [(settled["id"], "ok"), (lost, "abandoned")]
        )


def test_a_record_recovery_cannot_read_is_freed_with_a_warning_and_holds_back_no_other(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Path
) -> None:
    """Rows are swept in name order, a hundred at a time: a record another version (or a hand) wrote
    that cannot become an `abandoned` record must not stop every sweep at that row."""
    with one_settled_call(databases, fake_provider, tmp_path) as (_, database, model, ids, usage):
        [settled] = usage()
        unreadable = {"call_id": uuid.uuid4().hex, "record_id": str(uuid.uuid4())}  # no caller, no model
        after_it, beside_it = str(uuid.uuid4()), str(uuid.uuid4())
        leave_row(database, ids["cost"], "slot-000000000000-r0", [unreadable])  # swept first
        leave_row(
            database,
            ids["cost"],
            "slot-000000000000-r1",
            [unreadable, listed_record(settled, model, beside_it)],
        )
        leave_row(database, ids["cost"], "slot-ffffffffffff-r0", [listed_record(settled, model, after_it)])
        wait_for(lambda: len(usage()) == 3 and not holds(database), "the sweep stopped at the unreadable row")
        assert sorted((r["id"], r["status"]) for r in usage()) == sorted(
            [(settled["id"], "ok"), (after_it, "abandoned"), (beside_it, "abandoned")]
        )
        # An idempotency claim whose record cannot be read: its key is freed (a retry runs again).
        key = leave_claim(database, unreadable)
        wait_for(lambda: not claims(database, key), "the unreadable claim was never freed")
        log = (tmp_path / "0.log").read_text()
        assert log.count("recovery cannot read a dead call's record") == 3
        assert "slot-000000000000-r0 (TypeError)" in log
        assert "an idempotency claim (TypeError)" in log


def leave_claim(database_url: str, record: dict[str, Any]) -> str:
    """An idempotency claim in flight as a dead process leaves it, with `record` for recovery."""
    key, now = f"dead-{uuid.uuid4().hex[:8]}", datetime.now(UTC)
    claim = {
        "scope": "test",
        "key": key,
        "fingerprint": "0" * 64,
        "state": IN_FLIGHT,
        "claim": uuid.uuid4().hex,
        "lease_until": now - timedelta(seconds=1),
        "created_at": now,
        "expires_at": now + timedelta(days=1),
        "call": record,
    }
    on_database(database_url, lambda conn: conn.execute(IdempotencyRecord.__table__.insert().values(claim)))
    return key


def claims(database_url: str, key: str) -> list[str]:
    async def read(conn: AsyncConnection) -> list[str]:
        found = await conn.execute(select(IdempotencyRecord.key).where(IdempotencyRecord.key == key))
        return list(found.scalars())

    return on_database(database_url, read)


def test_allowances_are_on_unless_turned_off(make_gateway: Any) -> None:
    # Off, a busy process reserves call by call.
    assert load_settings({}).limit_allowances is True
    assert load_settings({"SWITCHBOARD_LIMIT_ALLOWANCES": "false"}).limit_allowances is False
    assert make_gateway().app.state.pipeline.allowances is not None
    assert make_gateway(env={"SWITCHBOARD_LIMIT_ALLOWANCES": "0"}).app.state.pipeline.allowances is None
