"""Metering at start (config economies synced, the usage writer started) and at stop (queue drained)."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from switchboard.metering.economies import sync_config_economies
from switchboard.metering.resolution import register_default
from switchboard.metering.writer import UsageWriter
from switchboard.settings import Settings

log = logging.getLogger("switchboard.metering")


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    async with app.state.sessionmaker() as session, session.begin():
        default = await sync_config_economies(session, settings.config)
    register_default(app.state.engine.sync_engine, default)
    app.state.default_economy = default
    writer = UsageWriter(
        app.state.sessionmaker,
        {entry.key: entry for entry in settings.config.models},
        queue_size=settings.usage_queue_size,
    )
    writer.start()
    app.state.call_sink = writer


async def shutdown(app: FastAPI) -> None:
    writer: UsageWriter | None = getattr(app.state, "call_sink", None)
    if writer is not None:
        await writer.close()
        log.info("usage writer drained: %d records in %d transactions", writer.records, writer.batches)
