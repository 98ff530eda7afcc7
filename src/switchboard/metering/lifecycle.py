"""Metering at start (config economies synced, retention started) and at stop; the usage writer is
settlement's (settlement/lifecycle.py)."""

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
from switchboard.settings import Settings

log = logging.getLogger("switchboard.metering")


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    try:
        check_config_economies(settings.config)
    except ConfigError as exc:
        raise ConfigError(locate(settings.config_path, str(exc))) from None
    async with app.state.sessionmaker() as session, session.begin():
        default = await sync_config_economies(session, settings.config, app.state.economy_budgets)
    register_default(app.state.engine.sync_engine, default)
    app.state.default_economy = default
    app.state.write_transactions = WriteTransactions(app.state.engine)
    await _warn_of_missing_cache_prices(settings)
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
    transactions: WriteTransactions | None = getattr(app.state, "write_transactions", None)
    if transactions is not None:
        await transactions.aclose()
