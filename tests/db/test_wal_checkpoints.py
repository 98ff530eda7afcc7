"""The ledger's SQLite connection commits on the event loop's thread and never checkpoints there: the
write-ahead log is checkpointed in a thread of its own, and stays bounded."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from sqlalchemy import Table

from switchboard.db.base import Base
from switchboard.db.batch_insert import CHECKPOINT_EVERY
from switchboard.db.driver_statements import driver_ready
from switchboard.db.engine import make_engine
from switchboard.db.models_registry import import_all_models
from switchboard.db.write_transaction import InlineConnection, WriteTransactions
from switchboard.limits.models import LimitHoldRow

HOLDS = cast(Table, LimitHoldRow.__table__)
INSERT = driver_ready(HOLDS.insert())
COMMITS = 15 * CHECKPOINT_EVERY
PAGE = 4096


def test_the_log_of_commits_on_the_loop_is_checkpointed_elsewhere_and_stays_bounded(tmp_path: Path) -> None:
    database = tmp_path / "ledger.db"

    async def scenario() -> tuple[int, int, int]:
        import_all_models()
        engine = make_engine(f"sqlite+aiosqlite:///{database}")
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        # The schema's own pages leave the log first: what is measured is the log of the commits alone
        # (a schema of more tables would otherwise count against the bound).
        async with engine.connect() as conn:
            plain = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await plain.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        transactions = WriteTransactions(engine)
        record = {"model": "m", "padding": "x" * 2000}  # a recovery record's size: a page or so a hold
        try:
            for index in range(COMMITS):
                async with transactions.begin() as conn:
                    assert isinstance(conn, InlineConnection)
                    if index == 0:
                        own = conn.driver.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
                    row = {
                        "call_id": f"call-{index}",
                        "limit_id": uuid.uuid4(),
                        "amount": index,
                        "lease_until": datetime(2026, 11, 26, tzinfo=UTC),
                        "call": record,
                    }
                    await conn.execute(INSERT, [row])
                # As a server's calls do between transactions: a started checkpoint gets its turn.
                await asyncio.sleep(0)
            checkpoints = transactions._checkpoints
            assert checkpoints is not None
            await checkpoints.finished()
            return own, checkpoints.done, (database.parent / "ledger.db-wal").stat().st_size
        finally:
            await transactions.aclose()
            await engine.dispose()

    own_autocheckpoint, checkpoints, wal_bytes = asyncio.run(scenario())
    assert own_autocheckpoint == 0  # SQLite's own checkpoint would run in the committing (loop's) thread
    assert checkpoints >= COMMITS // CHECKPOINT_EVERY - 1
    # Some 2 pages a commit: 3000 without checkpoints, up to 1000 with SQLite's own; one turn's worth here.
    assert wal_bytes // PAGE < 600, wal_bytes // PAGE
