"""Command-line options of the benchmark."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent


@dataclass(frozen=True)
class Options:
    dbs: tuple[str, ...]
    workers: tuple[int, ...]
    concurrency: tuple[int, ...]
    seconds: int  # per load phase
    warmup_seconds: int
    ttfb_samples: int
    litellm: bool
    check: bool
    quick: bool
    direct_only: bool
    profile: bool
    clients: bool
    pg_admin_dsn: str
    work: Path
    results: Path
    # Every measured call runs under two limits (cost/month and requests/minute on its economy).
    limits: bool = False
    # Rounds of phases with and without those limits in one gateway process (0: not asked for).
    limits_delta: int = 0
    # SWITCHBOARD_LIMIT_ALLOWANCES for the gateway (limits' per-process allowances; on by default).
    allowances: bool = True
    cache_delta: int = 0
    # The provider kinds the gateway's calls go to (each its own row; the upstream answers each in
    # its own wire format).
    providers: tuple[str, ...] = ("openai",)
    # Calls of each kind counted under callgrind instead of the load phases (0: not asked).
    instructions: int = 0
    # SWITCHBOARD_DATABASE_POOL_SIZE values each PostgreSQL gateway runs with, one after the other in
    # the same run (before/after a budget change); (): the gateway's default.
    pool_sizes: tuple[int, ...] = ()


def _ints(text: str) -> tuple[int, ...]:
    values = tuple(int(x) for x in text.split(",") if x.strip())
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("a comma-separated list of positive integers")
    return values


def parse(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="bench/run",
        description="Measure what Switchboard adds to a call, beside a direct call to the same upstream.",
    )
    parser.add_argument(
        "--db",
        choices=["sqlite", "postgres", "both", "none"],
        default="both",
        help="Switchboard's database (none: skip Switchboard, e.g. with --litellm)",
    )
    parser.add_argument("--workers", type=_ints, default=(1, 2), help="e.g. 1,2 (default) or 1")
    parser.add_argument("--concurrency", type=_ints, default=(1, 16, 64), help="default 1,16,64")
    parser.add_argument("--quick", action="store_true", help="short smoke run (2 s phases, 100 TTFB samples)")
    parser.add_argument("--seconds", type=int, help="seconds per load phase (default 10, quick 2)")
    parser.add_argument("--ttfb-samples", type=int, help="streamed calls timed at c=1 (default 1000)")
    parser.add_argument("--litellm", action="store_true", help="also measure LiteLLM proxy (no DB)")
    parser.add_argument("--direct-only", action="store_true", help="measure only the upstream itself")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the gateway with py-spy under load instead (--seconds per mode)",
    )
    parser.add_argument(
        "--clients",
        action="store_true",
        help="CPU per request of upstream clients: httpx, aiohttp, the relay's own, bare httptools",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a budget fails")
    parser.add_argument(
        "--limits",
        action="store_true",
        help="put two limits (cost/month, requests/minute, never reached) on the calls' economy",
    )
    parser.add_argument(
        "--allowances",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the limits' per-process allowances (SWITCHBOARD_LIMIT_ALLOWANCES; on, as by default)",
    )
    parser.add_argument(
        "--limits-delta",
        type=int,
        default=0,
        metavar="N",
        help="time what --limits's two limits add to a call: one gateway (one worker), N rounds of "
        "phases without and with them, alternated A-B-B-A (with --instructions: count them so)",
    )
    parser.add_argument(
        "--cache-delta",
        type=int,
        default=0,
        metavar="N",
        help="time a response-cache hit against a relayed call of the same size: one gateway (one "
        "worker), N rounds of phases of each, alternated A-B-B-A",
    )
    parser.add_argument(
        "--pg-admin-dsn",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="where a fresh database is created and dropped (trust auth by default)",
    )
    parser.add_argument(
        "--providers",
        default="openai",
        help="provider kinds the gateway calls, each its own row: openai (default), anthropic, gemini",
    )
    parser.add_argument(
        "--instructions",
        type=int,
        default=0,
        metavar="N",
        help="count the gateway's instructions per call over N calls of each kind under valgrind's "
        "callgrind (c=1 unless --concurrency is given; one worker) instead of timing load: the same count "
        "on a slow or busy machine",
    )
    parser.add_argument(
        "--pool-sizes",
        type=_ints,
        default=(),
        help="PostgreSQL: run each gateway once per SWITCHBOARD_DATABASE_POOL_SIZE, e.g. 40,10 "
        "(its peak connections are sampled from pg_stat_activity)",
    )
    args = parser.parse_args(argv)
    providers = tuple(p.strip() for p in args.providers.split(",") if p.strip())
    unknown = set(providers) - {"openai", "anthropic", "gemini"}
    if not providers or unknown:
        parser.error(f"--providers: unknown kind(s) {sorted(unknown)}; use openai, anthropic, gemini")
    dbs = {"both": ("sqlite", "postgres"), "none": ()}.get(args.db, (args.db,))
    return Options(
        dbs=dbs,
        workers=args.workers,
        concurrency=args.concurrency,
        seconds=args.seconds or (2 if args.quick else 20 if args.profile else 10),
        warmup_seconds=1 if args.quick else 2,
        ttfb_samples=args.ttfb_samples or (100 if args.quick else 1000),
        litellm=args.litellm,
        check=args.check,
        quick=args.quick,
        direct_only=args.direct_only,
        profile=args.profile,
        clients=args.clients,
        pg_admin_dsn=args.pg_admin_dsn,
        limits=args.limits,
        limits_delta=args.limits_delta,
        allowances=args.allowances,
        cache_delta=args.cache_delta,
        providers=providers,
        instructions=args.instructions,
        pool_sizes=args.pool_sizes,
        work=BENCH_DIR / ".work",
        results=BENCH_DIR / "results",
    )
