"""`switchboard usage verify`: are the hourly rollups the sums of their records? Exit 1 when not."""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError

from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.errors import ValidationFailed
from switchboard.metering.economies import find_economy
from switchboard.metering.retention import retention_cut
from switchboard.metering.rollup_check import Difference, differences, rebuild, span
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
        f"agent {key['agent_id']!r} {key['provider']}/{key['model']} {key['status']}"
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
            async for difference in differences(session, economy_id, start, end):
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
        days = sorted({hour_of(_hour(d)).replace(hour=0) for d in found})
        for day in days:
            async with sessionmaker() as session, session.begin():
                await rebuild(session, economy_id, max(day, start), min(day + timedelta(days=1), end))
        print(f"switchboard: rebuilt the rollups of {len(days)} day(s) from their records")
        return 0
    except SQLAlchemyError as exc:
        return _fail(f"database error: {type(exc).__name__} (is the database migrated?)", 1)
    finally:
        await engine.dispose()


def _hour(difference: Difference) -> datetime:
    return datetime.fromisoformat(difference.key["hour"])


def run(args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    try:
        return asyncio.run(_verify(args, settings.database_url, settings.usage_retention_days))
    except ValidationFailed as exc:
        return _fail(exc.message, 2)
