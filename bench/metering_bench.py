"""What durable metering adds to a call: the usage writer's group commit against one commit per record.

    .venv/bin/python -m bench.metering_bench [--db sqlite|postgres|both] [--concurrency 1 64]
        [--calls 4000] [--repeat 1] [--mode group-commit one-per-call] [--loop uvloop|asyncio]

C concurrent "calls" each hand a CallOutcome to the writer and wait, as /v1 does, until its record is
committed. Printed per database, concurrency and mode: records/s, the latency `record()` adds (p50, p99,
max), how many transactions carried the records, and the CPU this process spent per record (all its
threads, the SQLite library included; not the PostgreSQL server's). "harness" is that CPU with a sink
that stores nothing (the loop making the calls); "writer" is the difference, what the usage writer costs
a call. "one-per-call" is the same writer limited to batches of one, i.e. what a write per request would
cost; at concurrency 1 group commit has nothing to group and behaves the same. The event loop is
uvloop, as `switchboard serve` runs it, unless told otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from switchboard.config_file import GatewayConfig, ModelEntry
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.kit.clock import utcnow
from switchboard.limits.budgets import EconomyBudgets
from switchboard.metering.economies import economy_id_for, sync_config_economies
from switchboard.metering.outcome import CallOutcome
from switchboard.metering.writer import MAX_BATCH, UsageWriter
from switchboard.settlement.call import Settlement
from switchboard.settlement.writer import usage_writer

T = TypeVar("T")
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
    cpu_seconds: float
    concurrency: int

    @property
    def cpu_us_per_record(self) -> float:
        return self.cpu_seconds / self.records * 1e6

    def line(self, harness_us: float) -> str:
        lat = sorted(self.latencies_ms)
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        return (
            f"{self.database:9} c={self.concurrency:<3} {self.mode:13} "
            f"{self.records / self.seconds:7.0f} rec/s  "
            f"p50 {statistics.median(lat):6.2f} ms  p99 {p99:6.2f} ms  max {lat[-1]:6.2f} ms  "
            f"{self.transactions:5d} tx ({self.records / max(1, self.transactions):5.1f} rec/tx)  "
            f"CPU/rec {self.cpu_us_per_record:5.0f} us, writer {self.cpu_us_per_record - harness_us:5.0f} us"
        )


class NullSink:
    """Stores nothing: what the calling loop itself costs, to subtract from the writer's figures."""

    batches = 0

    async def record(self, outcome: CallOutcome) -> None:
        await asyncio.sleep(0)


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
    writer: UsageWriter[Settlement] | NullSink
    if mode == "harness":
        writer = NullSink()
    else:
        # As the gateway builds it (settlement/lifecycle.py).
        writer = usage_writer(
            sessionmaker,
            CATALOG,
            max_batch=MAX_BATCH if mode == "group-commit" else 1,
        )
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
        cpu = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        transactions = writer.batches - before
        return Result(database, mode, len(latencies), seconds, latencies, transactions, cpu, concurrency)
    finally:
        if isinstance(writer, UsageWriter):
            await writer.close()
        await engine.dispose()


async def prepare(url: str) -> None:
    engine = make_engine(url)
    try:
        await upgrade(engine)
        async with make_sessionmaker(engine)() as session, session.begin():
            await sync_config_economies(session, GatewayConfig(), EconomyBudgets())
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


def runner(loop: str) -> Callable[[Coroutine[None, None, T]], T]:
    def run(coroutine: Coroutine[None, None, T]) -> T:
        if loop == "uvloop":
            import uvloop

            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as loop_runner:
                return loop_runner.run(coroutine)
        return asyncio.run(coroutine)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each line (the machine is shared)")
    modes = ["group-commit", "one-per-call"]
    parser.add_argument("--mode", nargs="+", choices=modes, default=modes)
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    args = parser.parse_args()
    run = runner(args.loop)
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    print(f"usage writer, {args.calls} records per line, concurrency {args.concurrency}, {args.loop}")
    for kind in kinds:
        with database(kind) as url:
            asyncio.run(prepare(url))
            for concurrency in args.concurrency:
                # At concurrency 1 both modes write batches of one.
                line_modes = args.mode if concurrency > 1 else args.mode[:1]
                for _ in range(args.repeat):
                    harness = run(run_mode(url, kind, "harness", concurrency, args.calls))
                    for mode in line_modes:
                        result = run(run_mode(url, kind, mode, concurrency, args.calls))
                        print(result.line(harness.cpu_us_per_record), flush=True)


if __name__ == "__main__":
    main()
