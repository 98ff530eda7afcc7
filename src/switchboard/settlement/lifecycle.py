"""The usage writer at start (spooled records caught up) and at stop (its queue drained)."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from switchboard.metering.spool import UsageSpool
from switchboard.metering.writer import UsageWriter
from switchboard.settings import Settings
from switchboard.settlement.call import Settlement
from switchboard.settlement.writer import usage_writer

log = logging.getLogger("switchboard.metering")


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    outage = app.state.db_outage
    writer = usage_writer(
        app.state.sessionmaker,
        {entry.key: entry for entry in settings.config.models},
        queue_size=settings.usage_queue_size,
        outage=outage if outage.enabled else None,
        spool=UsageSpool(settings.data_dir) if outage.enabled else None,
        idempotency=app.state.idempotency,
        transactions=app.state.write_transactions,
    )
    writer.start()
    if outage.enabled:
        outage.on_recovery(writer.catch_up)
        await writer.catch_up()  # what a worker killed mid-outage left behind
    app.state.call_sink = writer


async def shutdown(app: FastAPI) -> None:
    writer: UsageWriter[Settlement] | None = getattr(app.state, "call_sink", None)
    if writer is not None:
        await writer.close()
        log.info("usage writer drained: %d records in %d transactions", writer.records, writer.batches)
