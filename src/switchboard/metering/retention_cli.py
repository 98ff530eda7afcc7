"""`switchboard usage purge`: delete the records past retention now (their hourly rollups stay)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.metering.retention import purge_records, retention_cut
from switchboard.settings import load_settings


async def _purge(database_url: str, days: int) -> int:
    cut = retention_cut(days)
    engine = make_engine(database_url)
    try:
        removed = await purge_records(make_sessionmaker(engine), cut)
    finally:
        await engine.dispose()
    print(f"switchboard: deleted {removed:,} usage records from before {cut.isoformat()} (rollups kept)")
    return 0


def run(args: argparse.Namespace) -> int:
    settings = load_settings(generate_secrets=False)
    days = args.days if args.days is not None else settings.usage_retention_days
    if days is None or days < 1:
        print("switchboard: give --days N (N ≥ 1) or set SWITCHBOARD_USAGE_RETENTION_DAYS", file=sys.stderr)
        return 2
    return asyncio.run(_purge(settings.database_url, days))
