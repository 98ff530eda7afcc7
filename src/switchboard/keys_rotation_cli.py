"""`switchboard keys rotate`: re-encrypt every credential (and webhook signing secret) under the first
configured key, and say so. A command over two domains, so it sits with the CLI, above both."""

from __future__ import annotations

import argparse
import asyncio
import sys

from switchboard.credentials.lifecycle import keyring_from
from switchboard.credentials.rotation import RotationReport, rotate
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.settings import load_settings
from switchboard.webhooks.rotation import SecretsRotated, rotate_webhook_secrets


async def _run(batch_size: int) -> tuple[RotationReport, SecretsRotated]:
    settings = load_settings()
    engine = make_engine(settings.database_url)
    try:
        await upgrade(engine)
        keyring = keyring_from(settings)
        report = await rotate(make_sessionmaker(engine), keyring, batch_size=batch_size)
        return report, await rotate_webhook_secrets(make_sessionmaker(engine), keyring)
    finally:
        await engine.dispose()


def run(args: argparse.Namespace) -> int:
    batch_size = int(getattr(args, "batch_size", 100))
    if batch_size < 1:
        print("switchboard keys rotate: --batch-size must be at least 1", file=sys.stderr)
        return 2
    report, webhooks = asyncio.run(_run(batch_size))
    for line in [*report.lines(), *webhooks.lines()]:
        print(line)
    return 1 if report.failed or webhooks.failed else 0
