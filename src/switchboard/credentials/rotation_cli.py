"""`switchboard keys rotate`: re-encrypt every credential under the first configured key, and say so."""

from __future__ import annotations

import argparse
import asyncio
import sys

from switchboard.credentials.lifecycle import keyring_from
from switchboard.credentials.rotation import RotationReport, rotate
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.settings import load_settings


async def _run(batch_size: int) -> RotationReport:
    settings = load_settings()
    engine = make_engine(settings.database_url)
    try:
        await upgrade(engine)
        return await rotate(make_sessionmaker(engine), keyring_from(settings), batch_size=batch_size)
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    batch_size = int(getattr(args, "batch_size", 100))
    if batch_size < 1:
        print("switchboard keys rotate: --batch-size must be at least 1", file=sys.stderr)
        return 2
    report = asyncio.run(_run(batch_size))
    for line in report.lines():
        print(line)
    return 1 if report.failed else 0
