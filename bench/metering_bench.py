"""What durable metering adds to a call: the usage writer's group commit against one commit per record.

    .venv/bin/python -m bench.metering_bench [--db sqlite|postgres|both] [--concurrency 64] [--calls 4000]

C concurrent "calls" each hand a CallOutcome to the writer and wait, as /v1 does, until its record is
committed. Printed per database and mode: records/s, the latency `record()` adds (p50, p99, max) and how
many transactions carried the records. "one-per-call" is the same writer limited to batches of one, i.e.
what a write per request would cost.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from switchboard.config_file import GatewayConfig, ModelEntry
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.kit.clock import utcnow
from switchboard.metering.economies import economy_id_for, sync_config_economies
from switchboard.metering.outcome import CallOutcome
from switchboard.metering.writer import MAX_BATCH, UsageWriter

POSTGRES_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
CATALOG = {
    "openai/gpt-4o-mini": ModelEntry(
        provider="openai", model="gpt-4o-mini", input_per_mtok="0.15", output_per_mtok="0.60"
    )
}


@dataclass
class Result:
    database: str
    mode: str
    records: int
    seconds: float
    latencies_ms: list[float]
    transactions: int

    def line(self) -> str:
        lat = sorted(self.latencies_ms)
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        return (
            f"{self.database:9} {self.mode:13} {self.records / self.seconds:9.0f} rec/s   "
            f"p50 {statistics.median(lat):7.2f} ms   p99 {p99:7.2f} ms   max {lat[-1]:7.2f} ms   "
            f"{self.transactions:5d} tx ({self.records / max(1, self.transactions):6.1f} rec/tx)"
        )


def outcome(user_id: uuid.UUID) -> CallOutcome:
    return CallOutcome(
        request_id=uuid.uuid4().hex,
        occurred_at=utcnow(),
        economy_id=economy_id_for("default"),
        user_id=user_id,
        provider="openai",
        model="gpt-4o-mini",
        selector="fast",
        endpoint="/v1/chat/completions",
        credential_scope="user",
        credential_id=uuid.uuid4(),
        prompt_tokens=812,
        completion_tokens=164,
        latency_ms=230,
        ttft_ms=80,
    )


async def run_mode(url: str, database: str, mode: str, concurrency: int, calls: int) -> Result:
    engine = make_engine(url)
    sessionmaker = make_sessionmaker(engine)
    writer = UsageWriter(sessionmaker, CATALOG, max_batch=MAX_BATCH if mode == "group-commit" else 1)
    writer.start()
    latencies: list[float] = []
    per_worker = calls // concurrency

    async def worker() -> None:
        user_id = uuid.uuid4()
        for _ in range(per_worker):
            started = time.perf_counter()
            await writer.record(outcome(user_id))
            latencies.append((time.perf_counter() - started) * 1000)

    try:
        await writer.record(outcome(uuid.uuid4()))  # warm the pool and the first-statement caches
        before = writer.batches
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
        return Result(database, mode, len(latencies), seconds, latencies, writer.batches - before)
    finally:
        await writer.close()
        await engine.dispose()


async def prepare(url: str) -> None:
    engine = make_engine(url)
    try:
        await upgrade(engine)
        async with make_sessionmaker(engine)() as session, session.begin():
            await sync_config_economies(session, GatewayConfig())
    finally:
        await engine.dispose()


@contextmanager
def database(kind: str) -> Iterator[str]:
    if kind == "postgres":
        from bench.postgres import fresh_database

        with fresh_database(POSTGRES_ADMIN_DSN) as url:
            yield url
        return
    with tempfile.TemporaryDirectory(prefix="metering-bench-") as tmp:
        yield f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--calls", type=int, default=4000)
    args = parser.parse_args()
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    print(f"usage writer, {args.concurrency} concurrent calls, {args.calls} records per mode")
    for kind in kinds:
        for mode in ("group-commit", "one-per-call"):
            with database(kind) as url:
                asyncio.run(prepare(url))
                print(asyncio.run(run_mode(url, kind, mode, args.concurrency, args.calls)).line(), flush=True)


if __name__ == "__main__":
    main()
