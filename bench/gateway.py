"""Switchboard as a real process: its own data dir, a minted token, real credentials made over HTTP."""

from __future__ import annotations

import base64
import itertools
import json
import os
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench import payloads
from bench.measure import TargetReport, measure, say
from bench.options import REPO, Options
from bench.postgres import PeakConnections, fresh_database
from bench.probe import Reply, call, time_to_first_answer
from bench.processes import BenchError, Child, free_port
from bench.target import Endpoint, Target
from bench.upstream import Upstream

SWITCHBOARD = REPO / ".venv" / "bin" / "switchboard"
STARTUP_TIMEOUT = 60.0
_CONFIG = """\
# Written by bench/gateway.py: the one model the benchmark calls, priced so that cost is computed.
models:
  - provider: openai
    model: gpt-4o-mini
    input_per_mtok: "0.15"
    output_per_mtok: "0.60"
  - provider: anthropic
    model: claude-3-5-haiku-latest
    input_per_mtok: "0.80"
    output_per_mtok: "4.00"
  - provider: gemini
    model: gemini-2.0-flash
    input_per_mtok: "0.10"
    output_per_mtok: "0.40"
"""


@dataclass(frozen=True)
class Identity:
    """A user whose own credential (of one provider kind) points at one of the upstream's answers."""

    token: str
    credential_id: str


@contextmanager
def _database(opts: Options, db: str, data_dir: Path) -> Iterator[str]:
    if db == "sqlite":
        yield f"sqlite+aiosqlite:///{data_dir / 'switchboard.db'}"
    else:
        with fresh_database(opts.pg_admin_dsn) as url:
            yield url


def _env(
    data_dir: Path, database_url: str, config: Path, port: int, allowances: bool = True
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env.update(
        SWITCHBOARD_DATA_DIR=str(data_dir),
        SWITCHBOARD_DATABASE_URL=database_url,
        SWITCHBOARD_CONFIG=str(config),
        SWITCHBOARD_JWT_SECRET=secrets.token_urlsafe(48),
        SWITCHBOARD_ENCRYPTION_KEYS="bench1:" + base64.b64encode(secrets.token_bytes(32)).decode(),
        SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS="true",
        SWITCHBOARD_PUBLIC_URL=f"http://127.0.0.1:{port}",
    )
    env["SWITCHBOARD_LIMIT_ALLOWANCES"] = "true" if allowances else "false"
    return env


def _mint(env: Mapping[str, str], sub: str, role: str = "User") -> str:
    out = subprocess.run(
        [str(SWITCHBOARD), "token", "--sub", sub, "--role", role, "--ttl", str(7 * 24 * 3600)],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise BenchError(f"switchboard token failed: {out.stderr.strip()}")
    return out.stdout.strip()


def _post(port: int, path: str, token: str, body: dict[str, object]) -> Reply:
    return call(
        Endpoint(
            f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), {"Authorization": f"Bearer {token}"}
        )
    )


def _identity(env: Mapping[str, str], port: int, base_url: str, provider: str = "openai") -> Identity:
    token = _mint(env, str(uuid.uuid4()))
    secret = "sk-bench-" + secrets.token_hex(16)
    reply = _post(
        port,
        "/llm-credentials",
        token,
        {"provider": provider, "secret": secret, "scope": "user", "base_url": base_url, "label": "bench"},
    )
    if reply.status != 201:
        raise BenchError(f"POST /llm-credentials answered {reply.status}: {reply.body[:300]!r}")
    return Identity(token, str(json.loads(reply.body)["id"]))


# Two limits on the economy every measured call is metered to, which no call comes near: what
# checking and settling them costs, not refusals.
BENCH_LIMITS = (
    {"metric": "cost", "window": "month", "amount": "9000000000000000000"},
    {"metric": "requests", "window": "minute", "amount": "1000000000"},
)


def limit_calls(port: int, admin: str) -> tuple[str, ...]:
    """Puts BENCH_LIMITS on the default economy; their ids."""
    ids = []
    for limit in BENCH_LIMITS:
        body = {"subject_type": "economy", "subject_id": "default", **limit}
        reply = _post(port, "/limits", admin, body)
        if reply.status != 201:
            raise BenchError(f"POST /limits answered {reply.status}: {reply.body[:300]!r}")
        ids.append(str(json.loads(reply.body)["id"]))
    return tuple(ids)


def _start(env: Mapping[str, str], port: int, workers: int, log: Path) -> Child:
    argv = [str(SWITCHBOARD), "serve", "--port", str(port), "--workers", str(workers)]
    return Child(f"switchboard (workers={workers})", argv, log, env=env, cwd=log.parent)


def _target(
    name: str,
    child: Child,
    port: int,
    workers: int,
    ids: dict[str, Identity],
    db_marker: str | None,
    provider: str = "openai",
) -> Target:
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    selector = payloads.SELECTORS[provider]
    return Target(
        name=name,
        pid=child.pid,
        workers=workers,
        db_marker=db_marker,
        json=Endpoint(
            url,
            payloads.request_body(selector, False),
            {"Authorization": f"Bearer {ids[f'{provider}:json'].token}"},
        ),
        stream=Endpoint(
            url,
            payloads.request_body(selector, True),
            {"Authorization": f"Bearer {ids[f'{provider}:stream'].token}"},
        ),
    )


def _usage_count(port: int, token: str) -> int | None:
    """Requests recorded in the default economy so far (None when the summary is not served)."""
    reply = call(
        Endpoint(
            f"http://127.0.0.1:{port}/economies/default/usage/summary?group_by=model",
            b"",
            {"Authorization": f"Bearer {token}"},
        ),
        method="GET",
    )
    if reply.status != 200:
        return None
    totals = json.loads(reply.body).get("totals", {})
    return int(totals.get("requests", 0))


@dataclass(frozen=True)
class Prepared:
    """A migrated database with two users and their credentials; the gateway is not running."""

    db: str
    home: Path
    env: dict[str, str]
    port: int
    ids: dict[str, Identity]
    admin_token: str
    db_marker: str | None  # how the PostgreSQL backends serving this gateway show in `ps`

    def start(self, workers: int, provider: str = "openai", pool_size: int = 0) -> tuple[Child, Target]:
        name = f"switchboard {self.db} x{workers}" + ("" if provider == "openai" else f" {provider}")
        env = dict(self.env)
        if pool_size:
            name += f" pool={pool_size}"
            env["SWITCHBOARD_DATABASE_POOL_SIZE"] = str(pool_size)
        log = self.home / f"serve-w{workers}-{provider}{pool_size or ''}.log"
        child = _start(env, self.port, workers, log)
        return child, _target(name, child, self.port, workers, self.ids, self.db_marker, provider)


@contextmanager
def prepared(db: str, opts: Options, upstream: Upstream) -> Iterator[Prepared]:
    home = opts.work / f"switchboard-{db}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    config = home / "switchboard.yaml"
    config.write_text(_CONFIG)
    port = free_port()
    with _database(opts, db, home / "data") as database_url:
        env = _env(home / "data", database_url, config, port, opts.allowances)
        # First start: migrations on a fresh database; then two users, each with a real credential.
        child = _start(env, port, 1, home / "serve-setup.log")
        try:
            child.wait_port(port, STARTUP_TIMEOUT)
            say(
                f"  first start (fresh database, migrations): listening after "
                f"{time.perf_counter() - child.started_at:.2f} s"
            )
            ids = {
                f"{provider}:{mode}": _identity(env, port, upstream.base_url(provider, mode), provider)
                for provider in opts.providers
                for mode in ("json", "stream")
            }
            admin = _mint(env, str(uuid.uuid4()), role="Admin")
            if opts.limits:
                limit_calls(port, admin)
        finally:
            child.stop()
        marker = f" {database_url.rsplit('/', 1)[1]} " if db == "postgres" else None
        yield Prepared(db, home, env, port, ids, admin, marker)


def _check_usage(report: TargetReport, records: int) -> None:
    """Every completed call left one record; calls cut off when wrk stopped may have left one too."""
    report.usage_records = records
    calls, extra = report.client_calls, report.cut_off
    say(f"  usage records written: {records} for {calls} completed calls (+ up to {extra} cut off by wrk)")
    if not calls <= records <= calls + extra:
        report.notes.append(f"usage records ({records}) do not match the {calls} calls (+ up to {extra})")


def run_db(db: str, opts: Options, upstream: Upstream, direct: Target) -> list[TargetReport]:
    say(f"\n== Switchboard on {db}")
    reports: list[TargetReport] = []
    with prepared(db, opts, upstream) as ready:
        pools = (opts.pool_sizes or (0,)) if db == "postgres" else (0,)
        for workers, provider, pool in itertools.product(opts.workers, opts.providers, pools):
            child, target = ready.start(workers, provider, pool)
            report = TargetReport(name=target.name, kind="switchboard", db=db, workers=workers)
            say(f"\n== {target.name}")
            try:
                report.startup_s = time_to_first_answer(child, target.json, STARTUP_TIMEOUT)
                say(f"  start to first answered /v1 call: {report.startup_s:.2f} s")
                before = _usage_count(ready.port, ready.admin_token)
                if ready.db_marker is None:
                    measure(opts, direct, target, report)
                else:
                    with PeakConnections(opts.pg_admin_dsn, ready.db_marker.strip()) as peak:
                        measure(opts, direct, target, report)
                    say(f"  peak PostgreSQL connections (pg_stat_activity) under load: {peak.peak}")
                after = _usage_count(ready.port, ready.admin_token)
                if before is not None and after is not None:
                    _check_usage(report, after - before)
            finally:
                child.stop()
            reports.append(report)
    return reports


def runner(db: str) -> Callable[[Options, Upstream, Target], list[TargetReport]]:
    def run(opts: Options, upstream: Upstream, direct: Target) -> list[TargetReport]:
        return run_db(db, opts, upstream, direct)

    return run
