"""Billing reads at scale (issue 21): export records/s, summary and paging times over millions of records.

    bench/run-billing [--db sqlite|postgres|both] [--records 2000000] [--grow-to 6000000]
    .venv/bin/python -m bench.billing …  (the same, without the set-up)

Fills a fresh database with N synthetic usage records of one economy over 30 days (COPY on
PostgreSQL, batched executemany on SQLite), sums them into the 5-minute, hourly and daily rollups
(the rebuild of `switchboard usage verify --repair`), then measures: the export (CSV and NDJSON,
every record, streamed as the API and CLI stream it) in records/s; the old Python exporter on a
sample; each summary `group_by` over a month whose ends cut hours, from the rollups and from the
records alone; one page of `/usage` at the start and deep in the table. `--grow-to M` adds records
to the same month up to M and measures again.
Users, rooms, agents and models follow a fixed, skewed population (seeded), as a real deployment's do.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.metering.export import orm_export_chunks
from switchboard.metering.fast_export import fast_chunks
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.outcome import new_record_id
from switchboard.metering.rollup_check import differences, rebuild
from switchboard.metering.rollup_summary import cover, summarize_fast
from switchboard.metering.rollups import hour_of
from switchboard.metering.schemas import GroupBy
from switchboard.metering.usage_queries import UsageFilter, records_after, summarize

POSTGRES_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
TABLE = cast(Table, UsageRecordRow.__table__)
COLUMNS = [column.name for column in TABLE.columns]
ECONOMY = uuid.UUID("5b0a2d01-0000-4000-8000-00000000b111")
MONTH = datetime(2025, 3, 1, tzinfo=UTC)
SPAN_SECONDS = 30 * 24 * 3600
GROUPS: tuple[GroupBy, ...] = ("day", "model", "user", "agent", "room")
CHUNK = 50_000
MODELS = [
    ("openai", "gpt-4o-mini", 40),
    ("openai", "gpt-4o", 15),
    ("anthropic", "claude-3-5-haiku-latest", 20),
    ("anthropic", "claude-sonnet-4", 10),
    ("gemini", "gemini-2.0-flash", 10),
    ("openai", "text-embedding-3-small", 5),
]


class Population:
    """50 users, each in one home room (or none) and using one or two agents (or none)."""

    def __init__(self, rng: random.Random) -> None:
        rooms: list[uuid.UUID | None] = [None, *(uuid.uuid4() for _ in range(10))]
        agents: list[str | None] = [None, *(f"agent-{index}" for index in range(8))]
        self.users = [
            (uuid.uuid4(), rng.choice(rooms), [rng.choice(agents) for _ in range(rng.randint(1, 2))])
            for _ in range(50)
        ]
        self.weights = [1 / (rank + 1) for rank in range(len(self.users))]  # a few heavy users


def synthetic_rows(count: int, seed: int) -> Iterator[list[tuple[object, ...]]]:
    """In time order, as the usage writer stores them, with its time-ordered (UUIDv7) ids."""
    rng = random.Random(seed)
    step = SPAN_SECONDS * 1_000_000 // max(1, count)
    people = Population(random.Random(21))
    models = [(p, m) for p, m, _ in MODELS]
    model_weights = [w for _, _, w in MODELS]
    made = 0
    while made < count:
        size = min(CHUNK, count - made)
        users = rng.choices(people.users, people.weights, k=size)
        picks = rng.choices(models, model_weights, k=size)
        chunk = []
        pairs = zip(users, picks, strict=True)
        for index, ((user_id, room_id, agents), (provider, model)) in enumerate(pairs):
            offset = (made + index) * step + rng.randrange(step)
            status = rng.choices(("ok", "error", "cancelled"), (94, 5, 1))[0]
            prompt, completion = rng.randrange(50, 4000), rng.randrange(0, 1500) if status == "ok" else 0
            values = {
                "id": new_record_id(),
                "request_id": uuid.uuid4().hex,
                "occurred_at": MONTH + timedelta(microseconds=offset),
                "economy_id": ECONOMY,
                "user_id": user_id,
                "room_id": room_id,
                "agent_id": rng.choice(agents),
                "session_id": None if rng.random() < 0.5 else f"s-{rng.randrange(10**6)}",
                "credential_id": None,
                "credential_scope": "deployment",
                "provider": provider,
                "model": model,
                "selector": f"{provider}/{model}",
                "endpoint": "/v1/chat/completions",
                "stream": rng.random() < 0.6,
                "status": status,
                "error_code": None if status == "ok" else "upstream_error",
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "cached_tokens": 0,
                "reasoning_tokens": 0,
                "cost": prompt * 150 + completion * 600,
                "priced": model != "gpt-4o",
                "input_per_mtok": "0.15",
                "output_per_mtok": "0.60",
                "markup_bps": 0,
                "price_source": "catalog",
                "latency_ms": rng.randrange(100, 5000),
                "ttft_ms": rng.randrange(50, 800),
                "idempotency_key": None,
                "usage_estimated": False,
                "api_key_id": None,
                "attempt": 1,
                "cache_write_tokens": 0,
                "cache_write_1h_tokens": 0,
                "service_tier": None,
                "prices": '{"input":"0.15","output":"0.60"}',
            }
            chunk.append(tuple(values[name] for name in COLUMNS))
        made += size
        yield chunk


async def fill(engine: AsyncEngine, count: int, seed: int) -> float:
    """Insert `count` records straight into the table; returns records/s."""
    started = time.perf_counter()
    if engine.dialect.name == "postgresql":
        async with engine.connect() as connection:
            driver: Any = (await connection.get_raw_connection()).driver_connection
            for chunk in synthetic_rows(count, seed):
                await driver.copy_records_to_table("usage_records", records=chunk, columns=COLUMNS)
    else:
        path = engine.url.database
        assert path is not None
        dialect = engine.dialect
        processors = [TABLE.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in COLUMNS]
        connection = sqlite3.connect(path)
        # The indexes of tens of millions of records outgrow SQLite's default 2 MB page cache.
        connection.execute("PRAGMA cache_size = -1000000")
        sql = f"INSERT INTO usage_records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
        try:
            for chunk in synthetic_rows(count, seed):
                rows = [
                    [
                        p(v) if p is not None and v is not None else v
                        for p, v in zip(processors, row, strict=True)
                    ]
                    for row in chunk
                ]
                with connection:
                    connection.executemany(sql, rows)
        finally:
            connection.close()
    return count / (time.perf_counter() - started)


async def roll_up(engine: AsyncEngine, sessionmaker: async_sessionmaker[AsyncSession]) -> float:
    started = time.perf_counter()
    async with sessionmaker() as session, session.begin():
        if engine.dialect.name == "postgresql":  # tens of millions of records grouped: sort in memory
            await session.execute(text("SET LOCAL work_mem = '512MB'"))
        await rebuild(session, ECONOMY, MONTH - timedelta(days=1), MONTH + timedelta(days=32))
    async with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            for table in ("usage_records", "usage_5min_rollups", "usage_rollups", "usage_daily_rollups"):
                await connection.execute(text(f"VACUUM ANALYZE {table}"))
        else:
            await connection.execute(text("ANALYZE"))
            await connection.commit()
    return time.perf_counter() - started


async def _drain(chunks: AsyncIterator[bytes]) -> tuple[int, int]:
    lines = size = 0
    async for chunk in chunks:
        lines += chunk.count(b"\n")
        size += len(chunk)
    return lines, size


async def _timed(make: Callable[[], Awaitable[Any]], repeat: int) -> float:
    """The median of `repeat` runs, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await make()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def measure(engine: AsyncEngine, sessionmaker: async_sessionmaker[AsyncSession], label: str) -> None:
    db = engine.dialect.name
    month = UsageFilter(economy_id=ECONOMY, start=MONTH, end=MONTH + timedelta(days=31))
    for fmt in ("csv", "ndjson"):
        started, cpu = time.perf_counter(), time.process_time()
        lines, size = await _drain(fast_chunks(sessionmaker, month, fmt, 10_000))  # type: ignore[arg-type]
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        records = lines - (1 if fmt == "csv" else 0)
        print(f"  {label} {db:10} export {fmt:6}  {records:>10,} records in {seconds:6.1f} s = "
              f"{records / seconds:9,.0f} records/s ({size / seconds / 2**20:5.1f} MiB/s; "
              f"this process's CPU {cpu:5.1f} s)")  # fmt: skip
    sample = UsageFilter(
        economy_id=ECONOMY, start=MONTH + timedelta(days=3), end=MONTH + timedelta(days=3, hours=6)
    )
    started = time.perf_counter()
    lines, _ = await _drain(orm_export_chunks(sessionmaker, sample, "csv", 1000))
    seconds = time.perf_counter() - started
    sampled = lines - 1
    print(
        f"  {label} {db:10} old Python exporter, csv, {sampled:,} records: {sampled / seconds:,.0f} records/s"
    )
    cut = UsageFilter(
        economy_id=ECONOMY, start=MONTH + timedelta(minutes=17), end=MONTH + timedelta(days=30, minutes=-23)
    )
    for group_by in GROUPS:

        async def fast(group_by: GroupBy = group_by) -> None:
            async with sessionmaker() as session:
                await summarize_fast(session, cut, group_by)

        async def slow(group_by: GroupBy = group_by) -> None:
            async with sessionmaker() as session:
                await summarize(session, cut, group_by)

        fast_s = await _timed(fast, 9)
        slow_s = await _timed(slow, 1)
        print(f"  {label} {db:10} summary {group_by:6} rollups {fast_s:6.3f} s, records only {slow_s:6.3f} s")
    await edges(sessionmaker, cut, label, db)
    async with sessionmaker() as session:
        total = int((await session.execute(text("SELECT count(*) FROM usage_records"))).scalar_one())
        rollup_rows = [
            int((await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())
            for table in ("usage_5min_rollups", "usage_rollups", "usage_daily_rollups")
        ]
        deep = (await session.execute(
            text("SELECT occurred_at, id FROM usage_records ORDER BY occurred_at, id LIMIT 1 OFFSET :n"),
            {"n": int(total * 0.9)},
        )).one()  # fmt: skip
    key = (deep[0] if isinstance(deep[0], datetime) else datetime.fromisoformat(deep[0]).replace(tzinfo=UTC),
           uuid.UUID(str(deep[1])))  # fmt: skip

    async def page(after: Any) -> None:
        async with sessionmaker() as session:
            await records_after(session, month, after, 501)

    first_s, deep_s = await _timed(lambda: page(None), 5), await _timed(lambda: page(key), 5)
    print(f"  {label} {db:10} /usage page of 500: first {first_s * 1000:6.1f} ms, at 90% depth "
          f"{deep_s * 1000:6.1f} ms  ({total:,} records; rollup rows: {rollup_rows[0]:,} of 5 minutes, "
          f"{rollup_rows[1]:,} hourly, {rollup_rows[2]:,} daily)")  # fmt: skip
    await verify_and_repair(sessionmaker, label, db)


async def edges(
    sessionmaker: async_sessionmaker[AsyncSession], cut: UsageFilter, label: str, db: str
) -> None:
    """Of a summary's time, what its records take: now (under 5 minutes at each end) and before the
    5-minute rollups (the partial hours at each end)."""
    assert cut.start is not None and cut.end is not None
    now_parts = [(first, last) for tier, first, last in cover(cut.start, cut.end) if tier is None]
    hour_after = hour_of(cut.start) + timedelta(hours=1)
    before_parts = [(cut.start, hour_after), (hour_of(cut.end), cut.end)]
    for name, parts in (("now: < 5 min per end", now_parts), ("before 0011: partial hours", before_parts)):

        async def read(parts: list[tuple[Any, Any]] = parts) -> None:
            async with sessionmaker() as session:
                for first, last in parts:
                    await summarize(session, UsageFilter(economy_id=ECONOMY, start=first, end=last), "model")

        read_s = await _timed(read, 9)
        print(f"  {label} {db:10} summary model, of which records ({name}): {read_s * 1000:6.1f} ms")


async def verify_and_repair(sessionmaker: async_sessionmaker[AsyncSession], label: str, db: str) -> None:
    """`usage verify` over one day, and `--repair`'s unit of work: one hour rebuilt (calls wait that long)."""
    day = MONTH + timedelta(days=15)
    started = time.perf_counter()
    async with sessionmaker() as session:
        found = [d async for d in differences(session, ECONOMY, day, day + timedelta(days=1))]
    verify_s = time.perf_counter() - started
    hour = day + timedelta(hours=12)
    started = time.perf_counter()
    async with sessionmaker() as session, session.begin():
        await rebuild(session, ECONOMY, hour, hour + timedelta(hours=1))
    repair_s = time.perf_counter() - started
    print(f"  {label} {db:10} verify of one day {verify_s:5.2f} s ({len(found)} differences); "
          f"repair of one hour {repair_s * 1000:6.1f} ms")  # fmt: skip


@contextmanager
def database(kind: str, admin_dsn: str) -> Iterator[str]:
    if kind == "postgres":
        from bench.postgres import fresh_database

        with fresh_database(admin_dsn) as url:
            yield url
        return
    with tempfile.TemporaryDirectory(prefix="billing-bench-") as tmp:
        yield f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"


async def run(url: str, records: int, grow_to: int | None) -> None:
    engine = make_engine(url)
    sessionmaker = make_sessionmaker(engine)
    try:
        await upgrade(engine)
        steps = [records] + ([grow_to] if grow_to and grow_to > records else [])
        filled = 0
        for step, target in enumerate(steps):
            rate = await fill(engine, target - filled, seed=step)
            filled = target
            rollup_s = await roll_up(engine, sessionmaker)
            print(f"  {engine.dialect.name}: filled to {filled:,} records ({rate:,.0f} records/s); "
                  f"rollups rebuilt and analysed in {rollup_s:.1f} s")  # fmt: skip
            await measure(engine, sessionmaker, f"{filled / 1_000_000:g}M")
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument(
        "--grow-to", type=int, default=None, help="then add records up to this many and measure again"
    )
    parser.add_argument("--pg-admin-dsn", default=POSTGRES_ADMIN_DSN)
    args = parser.parse_args()
    for kind in ["sqlite", "postgres"] if args.db == "both" else [args.db]:
        print(f"== {kind}")
        with database(kind, args.pg_admin_dsn) as url:
            asyncio.run(run(url, args.records, args.grow_to))


if __name__ == "__main__":
    main()
