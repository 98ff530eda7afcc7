"""One transaction per batch of finished calls: their usage records and rollups, and what each
call's ending settles with its record (limit holds and counters, the idempotent answer, a dead call's
recovery). The usage writer's queue (metering/writer.py) hands each batch to `SettlementTransaction`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import cast

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.db.batch_insert import PostgresBatchInsert, SqliteBatchInsert, batch_insert
from switchboard.db.driver_statements import driver_ready
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import InlineConnection, LedgerConnection, WriteTransactions
from switchboard.idempotency.service import IdempotencyStore
from switchboard.kit.clock import utcnow
from switchboard.limits.allowance_rows import Part
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.record_rows import COLUMNS, COST_INDEX, RecordRows
from switchboard.metering.rollups import RecordsExisted, RollupKeeper
from switchboard.metering.writer import Pending
from switchboard.settlement import limit_counters, recovery
from switchboard.settlement.call import Settlement
from switchboard.settlement.limit_counters import Actual, DrawnTally, actuals_of
from switchboard.settlement.postgres import SettlingStatement

_TABLE = cast(Table, UsageRecordRow.__table__)

Batch = list[Pending[Settlement]]


class SettlementTransaction:
    """The usage writer's `BatchCommit`: each batch in one transaction (SPEC §8, §13)."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        engine: AsyncEngine,
        rows: RecordRows,
        idempotency: IdempotencyStore | None,
        transactions: WriteTransactions,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._rows = rows
        self._idempotency = idempotency
        self._transactions = transactions
        # Every insert also adds its records to the hourly and daily rollups, in the same transaction.
        self._rollups = RollupKeeper(COLUMNS, engine.dialect)
        self._insert = batch_insert(
            engine,
            _TABLE,
            COLUMNS,
            sqlite_after=self._rollups.after_sqlite_insert if self._rollups.postgres is None else None,
            postgres_statement=self._rollups.postgres,
        )
        self._core_insert = driver_ready(insert_for(engine.dialect.name)(_TABLE).on_conflict_do_nothing())

    async def close(self) -> None:
        await self._insert.close()

    async def commit(self, batch: Batch) -> None:
        try:
            await self._commit_once(batch)
        except RecordsExisted:
            # A batch retried (or replayed from the spool) whose earlier commit went through after
            # all: those records, and what committed with them, are stored. Write only the others.
            fresh = await self._not_stored(batch)
            if fresh:
                await self._commit_once(fresh)

    async def _not_stored(self, batch: Batch) -> Batch:
        async with self._sessionmaker() as session:
            stored = set(
                await session.scalars(
                    select(UsageRecordRow.id).where(UsageRecordRow.id.in_([p.record_id for p in batch]))
                )
            )
        return [pending for pending in batch if pending.record_id not in stored]

    async def _commit_once(self, batch: Batch) -> None:
        if any(pending.settlement is not None for pending in batch):
            await self._commit_with_settlements(batch)
            return
        rows = await self._rows.rows(batch)
        # DO NOTHING on a known id: a retry after a commit whose acknowledgement was lost must not
        # double a record.
        await self._insert.insert(rows)

    async def _commit_with_settlements(self, batch: Batch) -> None:
        """Records, limit settlements and idempotent answers of the batch in one transaction (SPEC §13)."""
        if isinstance(self._insert, PostgresBatchInsert) and all(
            p.settlement is None or (p.settlement.claim is None and not p.settlement.abandoned) for p in batch
        ):
            await self._settle_in_one_statement(batch)
            return
        rows = await self._rows.rows(batch)
        now = utcnow()
        transactions = self._transactions
        async with transactions.rows_locked_here(_allowances_of(batch)), transactions.begin() as conn:
            kept: list[tuple[object, ...]] = []
            actuals: list[Actual] = []
            drawn = DrawnTally()
            returned: list[Part] = []
            recovered: list[tuple[object, ...]] = []
            for pending, row in zip(batch, rows, strict=True):
                settlement = pending.settlement
                if settlement is not None and settlement.abandoned:
                    if await self._free_dead(conn, settlement, now) or await self._row_gone(conn, settlement):
                        recovered.append(row)
                    continue
                kept.append(row)
                if settlement is None:
                    continue
                if settlement.claim is not None and self._idempotency is not None:
                    if settlement.stored is not None:
                        await self._idempotency.complete_in(conn, settlement.claim, settlement.stored)
                    else:
                        await self._idempotency.release_in(conn, settlement.claim)
                if settlement.call_id is not None:
                    cost = cast(int, row[COST_INDEX])
                    if settlement.drawn:
                        drawn.add(settlement.call_id, settlement.limits, pending.outcome, cost)
                    else:
                        actuals.extend(
                            actuals_of(settlement.call_id, settlement.limits, pending.outcome, cost)
                        )
                returned.extend(settlement.returned)
            if recovered:
                kept.extend(await self._not_yet_stored(conn, recovered))
            if kept:
                if isinstance(conn, InlineConnection) and isinstance(self._insert, SqliteBatchInsert):
                    # The very insert (and rollups) of a batch without settlements, in this transaction.
                    self._insert.insert_on(conn.driver, kept)
                else:
                    await self._rollups.insert_in(conn, self._core_insert, kept)
            await limit_counters.settle(conn, actuals, returned, drawn)

    async def _settle_in_one_statement(self, batch: Batch) -> None:
        """PostgreSQL, holds only (no idempotent answer, no recovery): the records' own statement with
        the settlement in front, one round trip like a batch without limits."""
        assert isinstance(self._insert, PostgresBatchInsert) and self._rollups.postgres is not None
        rows = await self._rows.rows(batch)
        actuals: list[tuple[uuid.UUID, Actual]] = []
        returned: list[tuple[uuid.UUID, uuid.UUID, str, int]] = []
        for pending, row in zip(batch, rows, strict=True):
            settlement = pending.settlement
            if settlement is None or settlement.call_id is None:
                continue
            returned.extend((pending.record_id, *part) for part in settlement.returned)
            cost = cast(int, row[COST_INDEX])
            actuals.extend(
                (pending.record_id, actual)
                for actual in actuals_of(
                    settlement.call_id, settlement.limits, pending.outcome, cost, settlement.drawn
                )
            )
        statement = SettlingStatement(self._rollups.postgres, actuals, utcnow(), returned)
        async with self._transactions.rows_locked_here(_allowances_of(batch)):
            await self._insert.insert(rows, statement)

    async def _not_yet_stored(
        self, conn: LedgerConnection, rows: list[tuple[object, ...]]
    ) -> list[tuple[object, ...]]:
        """A dead call's `abandoned` record, once: recovery frees its holds and its idempotency key
        separately (and every replica sweeps), each bringing the same record id. What it freed is
        committed either way; the record is stored by the first."""
        ids = list(dict.fromkeys(row[0] for row in rows))
        stored = set((await conn.execute(select(_TABLE.c.id).where(_TABLE.c.id.in_(ids)))).scalars())
        fresh: list[tuple[object, ...]] = []
        for row in rows:
            if row[0] not in stored:
                stored.add(row[0])
                fresh.append(row)
        return fresh

    @staticmethod
    async def _row_gone(conn: LedgerConnection, settlement: Settlement) -> bool:
        """A listed record (recovery.recover) whose row another of its records freed, or that went
        once its calls settled: written unless its id is stored (`_not_yet_stored`). One whose row
        is there again (its process renewed it: alive after all) is not."""
        return (
            settlement.listed
            and settlement.call_id is not None
            and not await recovery.still_held(conn, settlement.call_id)
        )

    async def _free_dead(self, conn: LedgerConnection, settlement: Settlement, now: datetime) -> bool:
        freed = False
        if settlement.call_id is not None:
            freed = await recovery.release_dead_holds(conn, settlement.call_id, now)
        if settlement.claim is not None and self._idempotency is not None:
            freed = await self._idempotency.release_dead_in(conn, settlement.claim, now) or freed
        return freed


def _allowances_of(batch: Batch) -> set[str]:
    """The allowances (limits/allowances.py) whose rows the batch's settlements change: this process
    changes them elsewhere too (a grant, the upkeep), and on PostgreSQL two statements changing the
    same rows in different orders deadlock. They take turns here instead (`rows_locked_here`)."""
    names: set[str] = set()
    for pending in batch:
        settlement = pending.settlement
        if settlement is not None:
            if settlement.drawn and settlement.call_id is not None:
                names.add(settlement.call_id)
            names.update(name for _, name, _ in settlement.returned)
    return names
