"""`switchboard usage export`: an economy's usage records as CSV or NDJSON, to a file or stdout."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.exc import SQLAlchemyError

from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.errors import ValidationFailed
from switchboard.kit.clock import utcnow
from switchboard.metering.economies import find_economy
from switchboard.metering.export import ExportFormat, export_chunks
from switchboard.metering.export_progress import ExportProgress
from switchboard.metering.timerange import parse_range
from switchboard.metering.usage_queries import UsageFilter
from switchboard.settings import load_settings


def _fail(message: str, code: int) -> int:
    print(f"switchboard: {message}", file=sys.stderr)
    return code


async def _export(
    database_url: str, economy_ref: str, usage: UsageFilter, fmt: ExportFormat, output: str | None
) -> int:
    engine = make_engine(database_url)
    sessionmaker = make_sessionmaker(engine)
    try:
        async with sessionmaker() as session:
            economy = await find_economy(session, economy_ref)
        if economy is None:
            return _fail(f"no economy with id or slug {economy_ref!r}", 1)
        usage = UsageFilter(economy_id=economy.id, start=usage.start, end=usage.end)
        progress = ExportProgress(fmt)
        if output is None:
            await _write(export_chunks(sessionmaker, usage, fmt), sys.stdout.buffer, progress)
            progress.finish("standard output")
            return 0
        # Written aside and renamed at the end: a failed export never leaves a plausible-looking file.
        target = Path(output)
        partial = target.with_name(target.name + ".partial")
        with partial.open("wb") as handle:
            await _write(export_chunks(sessionmaker, usage, fmt), handle, progress)
        os.replace(partial, target)
        progress.finish(str(target))
        return 0
    except SQLAlchemyError as exc:
        hint = "is the database migrated? `switchboard db upgrade`"
        return _fail(f"database error: {type(exc).__name__} ({hint})", 1)
    finally:
        await engine.dispose()


async def _write(chunks: AsyncIterator[bytes], handle: BinaryIO, progress: ExportProgress) -> None:
    async for chunk in chunks:
        handle.write(chunk)
        progress.add(chunk)
    handle.flush()


def run(args: argparse.Namespace) -> int:
    try:
        start, end = parse_range(args.from_, args.to)
    except ValidationFailed as exc:
        return _fail(exc.message, 2)
    if args.output is not None and not Path(args.output).resolve().parent.is_dir():
        return _fail(f"--output: the folder {Path(args.output).resolve().parent} does not exist", 2)
    settings = load_settings(generate_secrets=False)
    # Without --to, the export is the records that existed when it started.
    usage = UsageFilter(start=start, end=end or utcnow())
    return asyncio.run(_export(settings.database_url, args.economy, usage, args.format, args.output))
