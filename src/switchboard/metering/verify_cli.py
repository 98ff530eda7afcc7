"""`switchboard usage verify`: are the rollups the sums of their records? Exit 1 when not (or repair)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.errors import ValidationFailed
from switchboard.metering.economies import find_economy
from switchboard.metering.retention import retention_cut
from switchboard.metering.rollup_check import (
    Difference,
    differences,
    economies,
    rebuild,
    rebuild_day,
    span,
)
from switchboard.metering.rollups import hour_of
from switchboard.metering.timerange import parse_range
from switchboard.settings import load_settings

SHOWN = 50  # differences printed in full; the rest are counted


def _fail(message: str, code: int) -> int:
    print(f"switchboard: {message}", file=sys.stderr)
    return code


def _line(difference: Difference) -> str:
    key = difference.key
    where = (
        f"economy {key['economy_id']} {difference.tier} {key['hour']} user {key['user_id']} "
        f"room {key['room_id']} "
        f"agent {key['agent_id']!r} {key['provider']}/{key['model']} {key['status']} "
        f"api key {key['api_key_id']}"
    )
    return f"{where}: records {difference.from_records} rollups {difference.in_rollups}"


async def _verify(args: argparse.Namespace, database_url: str, retention_days: int | None) -> int:
    start, end = parse_range(args.from_, args.to)
    engine = make_engine(database_url)
    sessionmaker = make_sessionmaker(engine)
    try:
        economy_id: uuid.UUID | None = None
        async with sessionmaker() as session:
            if args.economy is not None:
                economy = await find_economy(session, args.economy)
                if economy is None:
                    return _fail(f"no economy with id or slug {args.economy!r}", 1)
                economy_id = economy.id
            stored = await span(session, economy_id)
        if stored is None:
            print("switchboard: no records and no rollups to compare")
            return 0
        start = hour_of(start) if start is not None else stored[0]
        end = hour_of(end - timedelta(microseconds=1)) + timedelta(hours=1) if end is not None else stored[1]
        if retention_days:
            # Hours past retention keep their rollups and no records: nothing to compare there.
            start = max(start, retention_cut(retention_days))
        found: list[Difference] = []
        async with sessionmaker() as session:
            # One economy at a time: each hour's records are then read through the economy's index.
            for one in [economy_id] if economy_id is not None else await economies(session):
                own = await span(session, one)  # its own days, not every economy's
                if own is None:
                    continue
                async for difference in differences(session, one, max(start, own[0]), min(end, own[1])):
                    if len(found) < SHOWN:
                        print(_line(difference))
                    found.append(difference)
        if not found:
            print(f"switchboard: rollups match the records from {start.isoformat()} to {end.isoformat()}")
            return 0
        if len(found) > SHOWN:
            print(f"… and {len(found) - SHOWN} more")
        if not args.repair:
            return _fail(f"{len(found)} rollup row(s) differ from their records (--repair rebuilds them)", 1)
        days = sorted({(d.key["economy_id"], hour_of(_hour(d)).replace(hour=0)) for d in found})
        for which, day in days:
            last = min(day + timedelta(days=1), end)
            await _repair_day(sessionmaker, uuid.UUID(which), max(day, start), last)
        print(f"switchboard: rebuilt the rollups of {len(days)} day(s) from their records")
        return 0
    except SQLAlchemyError as exc:
        return _fail(f"database error: {type(exc).__name__} (is the database migrated?)", 1)
    finally:
        await engine.dispose()


async def _repair_day(
    sessionmaker: async_sessionmaker[AsyncSession],
    economy_id: uuid.UUID,
    start: datetime,
    end: datetime,
) -> None:
    """An hour per transaction, then the day's row from its hours: calls that end meanwhile wait for
    one hour's rebuild at most (see rollup_check.lock_out_writers)."""
    hour = start
    while hour < end:
        async with sessionmaker() as session, session.begin():
            await rebuild(session, economy_id, hour, hour + timedelta(hours=1))
        hour += timedelta(hours=1)
    if start == start.replace(hour=0) and end == start + timedelta(days=1):
        async with sessionmaker() as session, session.begin():
            await rebuild_day(session, economy_id, start)


def _hour(difference: Difference) -> datetime:
    return datetime.fromisoformat(difference.key["hour"])


def run(args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    try:
        return asyncio.run(_verify(args, settings.database_url, settings.usage_retention_days))
    except ValidationFailed as exc:
        return _fail(exc.message, 2)
