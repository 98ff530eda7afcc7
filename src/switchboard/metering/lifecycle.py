"""Metering at start (config economies synced, the usage writer started) and at stop (queue drained)."""

from __future__ import annotations

import asyncio
import logging

from fastapi import FastAPI

from switchboard.config_file import ConfigError, locate
from switchboard.db.write_transaction import WriteTransactions
from switchboard.metering import retention
from switchboard.metering.economies import check_config_economies, sync_config_economies
from switchboard.metering.pricing import missing_cache_prices
from switchboard.metering.resolution import register_default
from switchboard.metering.spool import UsageSpool
from switchboard.metering.writer import UsageWriter
from switchboard.settings import Settings

log = logging.getLogger("switchboard.metering")


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    try:
        check_config_economies(settings.config)
    except ConfigError as exc:
        raise ConfigError(locate(settings.config_path, str(exc))) from None
    async with app.state.sessionmaker() as session, session.begin():
        default = await sync_config_economies(session, settings.config)
    register_default(app.state.engine.sync_engine, default)
    app.state.default_economy = default
    outage = app.state.db_outage
    app.state.write_transactions = WriteTransactions(app.state.engine)
    writer = UsageWriter(
        app.state.sessionmaker,
        {entry.key: entry for entry in settings.config.models},
        queue_size=settings.usage_queue_size,
        outage=outage if outage.enabled else None,
        spool=UsageSpool(settings.data_dir) if outage.enabled else None,
        idempotency=app.state.idempotency,
        transactions=app.state.write_transactions,
    )
    writer.start()
    await _warn_of_missing_cache_prices(settings)
    if outage.enabled:
        outage.on_recovery(writer.catch_up)
        await writer.catch_up()  # what a worker killed mid-outage left behind
    app.state.call_sink = writer
    retention.start(app, settings.usage_retention_days)


async def _warn_of_missing_cache_prices(settings: Settings) -> None:
    entries = {entry.key: entry for entry in settings.config.models}
    # litellm's map is a file read once (~30 ms): off the event loop, as the price book reads it.
    missing = await asyncio.to_thread(missing_cache_prices, entries)
    if missing:
        log.warning(
            "the catalog prices %s without cache prices, which litellm's map has: their cache reads and "
            "writes are billed at the input price (add cache_read_per_mtok, cache_write_per_mtok, "
            "cache_write_1h_per_mtok)",
            ", ".join(missing),
        )


async def shutdown(app: FastAPI) -> None:
    await retention.stop(app)
    writer: UsageWriter | None = getattr(app.state, "call_sink", None)
    if writer is not None:
        await writer.close()
        log.info("usage writer drained: %d records in %d transactions", writer.records, writer.batches)
    transactions: WriteTransactions | None = getattr(app.state, "write_transactions", None)
    if transactions is not None:
        await transactions.aclose()
