"""`switchboard audit verify | export | purge`: check the chain, write events out, purge past retention."""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import os
import sys
from pathlib import Path
from typing import BinaryIO

import orjson

from switchboard.audit import retention, service
from switchboard.audit.events import CLI, JsonValue, Origin, canonical
from switchboard.audit.verify import Verdict, verify
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.errors import ValidationFailed
from switchboard.settings import load_settings

CSV_COLUMNS = (
    "seq",
    "id",
    "at",
    "actor_user_id",
    "actor_role",
    "actor_auth_method",
    "actor_api_key_id",
    "actor_delegation_token_id",
    "action",
    "target_type",
    "target_id",
    "changes",
    "request_id",
    "ip",
    "economy_id",
    "room_id",
    "prev_hash",
    "hash",
)


def _fail(message: str, code: int) -> int:
    print(f"switchboard: {message}", file=sys.stderr)
    return code


async def _verify(database_url: str) -> Verdict:
    engine = make_engine(database_url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(verify)
    finally:
        await engine.dispose()


def run_verify(_args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    verdict = asyncio.run(_verify(settings.database_url))
    print(f"audit verify: {verdict.message}", file=sys.stdout if verdict.ok else sys.stderr)
    return 0 if verdict.ok else 1


def _csv_row(event: dict[str, JsonValue]) -> bytes:
    actor, target, scope = (event["actor"], event["target"], event["scope"])
    assert isinstance(actor, dict) and isinstance(target, dict) and isinstance(scope, dict)
    flat = {
        **{f"actor_{name}": value for name, value in actor.items()},
        **event,
        "target_type": target["type"],
        "target_id": target["id"],
        "economy_id": scope["economy_id"],
        "room_id": scope["room_id"],
        "changes": canonical(event["changes"]).decode(),
    }
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(
        ["" if flat[c] is None else flat[c] for c in CSV_COLUMNS]
    )
    return buffer.getvalue().encode()


async def _export(database_url: str, filters: service.Filters, fmt: str, handle: BinaryIO) -> int:
    engine = make_engine(database_url)
    count = 0
    try:
        async with make_sessionmaker(engine)() as session:
            if fmt == "csv":
                handle.write((",".join(CSV_COLUMNS) + "\n").encode())
            async for event in service.stream(session, filters):
                handle.write(_csv_row(event) if fmt == "csv" else orjson.dumps(event) + b"\n")
                count += 1
    finally:
        await engine.dispose()
    handle.flush()
    return count


def run_export(args: argparse.Namespace) -> int:
    try:
        filters = service.Filters.parse(args.from_, args.to, None, None, None, None)
    except ValidationFailed as exc:
        return _fail(exc.message, 2)
    settings = load_settings(generate_secrets=False)
    if args.output is None:
        count = asyncio.run(_export(settings.database_url, filters, args.format, sys.stdout.buffer))
        print(f"switchboard: exported {count:,} audit events", file=sys.stderr)
        return 0
    target = Path(args.output)
    if not target.resolve().parent.is_dir():
        return _fail(f"--output: the folder {target.resolve().parent} does not exist", 2)
    # Written aside and renamed at the end: a failed export never leaves a plausible-looking file.
    partial = target.with_name(target.name + ".partial")
    with partial.open("wb") as handle:
        count = asyncio.run(_export(settings.database_url, filters, args.format, handle))
    os.replace(partial, target)
    print(f"switchboard: exported {count:,} audit events to {target}", file=sys.stderr)
    return 0


async def _purge(database_url: str, days: int) -> int:
    engine = make_engine(database_url)
    try:
        return await retention.purge(make_sessionmaker(engine), days, Origin(actor=CLI))
    finally:
        await engine.dispose()


def run_purge(args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    days = args.days if args.days is not None else settings.audit_retention_days
    if days is None or days < 1:
        return _fail("give --days N (N ≥ 1) or set SWITCHBOARD_AUDIT_RETENTION_DAYS", 2)
    removed = asyncio.run(_purge(settings.database_url, days))
    print(f"switchboard: purged {removed:,} audit events older than {days} whole days")
    return 0
