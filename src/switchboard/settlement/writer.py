"""The usage writer as the gateway runs it: metering's queue committing through the settlement transaction."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.config_file import ModelEntry
from switchboard.db.outage import DatabaseOutage
from switchboard.db.write_transaction import WriteTransactions
from switchboard.idempotency.service import IdempotencyStore
from switchboard.metering.price_book import PriceBook
from switchboard.metering.record_rows import RecordRows
from switchboard.metering.spool import UsageSpool
from switchboard.metering.writer import MAX_BATCH, UsageWriter
from switchboard.settlement.call import Settlement
from switchboard.settlement.transaction import SettlementTransaction


def usage_writer(
    sessionmaker: async_sessionmaker[AsyncSession],
    catalog: Mapping[str, ModelEntry],
    queue_size: int = 10_000,
    max_batch: int = MAX_BATCH,
    outage: DatabaseOutage | None = None,
    spool: UsageSpool | None = None,
    idempotency: IdempotencyStore | None = None,
    transactions: WriteTransactions | None = None,
) -> UsageWriter[Settlement]:
    """`record(outcome, settlement)` returns once the record and its settlement are committed."""
    engine = sessionmaker.kw.get("bind")
    if not isinstance(engine, AsyncEngine):
        raise TypeError("the usage writer needs a sessionmaker bound to an AsyncEngine")
    rows = RecordRows(PriceBook(sessionmaker, engine.sync_engine, catalog))
    transaction = SettlementTransaction(
        sessionmaker, engine, rows, idempotency, transactions or WriteTransactions(engine)
    )
    return UsageWriter(transaction, rows, queue_size, max_batch, outage, spool)
