"""Stored answers in the database, sealed with the credential key ring, bounded by TTL and by size."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, delete, func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.cache.entry import CachedAnswer, CorruptEntry, decode, encode
from switchboard.cache.models import CachedAnswerRow
from switchboard.cache.reader import SealedReader
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import WriteTransactions
from switchboard.kit.clock import utcnow
from switchboard.kit.crypto import CryptoError, Keyring

log = logging.getLogger("switchboard.cache")

_TABLE = cast(Table, CachedAnswerRow.__table__)
# Bound into every sealed answer with its key: an answer moved to another key does not open.
_PURPOSE = b"switchboard/response-cache/v1:"
# Rows looked at per eviction pass when the bound is passed (the oldest first).
EVICT_BATCH = 500


def _associated(key: bytes) -> bytes:
    return _PURPOSE + key


class CacheStore:
    """`app.state.cache`. Reads and writes never fail a call: trouble is logged and counts as a miss."""

    def __init__(
        self,
        engine: AsyncEngine,
        keyring: Keyring,
        max_bytes: int,
        clock: Callable[[], datetime] = utcnow,
        metrics: Any = None,
        transactions: WriteTransactions | None = None,
    ) -> None:
        self._engine = engine
        self._reader = SealedReader(engine, transactions, clock)
        self._keyring = keyring
        self.max_bytes = max_bytes
        self._clock = clock
        self._insert = insert_for(engine.dialect.name)
        self._metrics = metrics
        self._counters: dict[str, Any] = {}

    def counted(self, result: str) -> None:
        """`switchboard_cache_lookups_total{result}`: hit or miss (each child looked up once)."""
        if self._metrics is None:
            return
        child = self._counters.get(result)
        if child is None:
            child = self._counters[result] = self._metrics.cache_lookups.labels(result)
        child.inc()

    async def get(self, key: bytes) -> CachedAnswer | None:
        try:
            sealed = await self._reader.read(key, self._clock())
        except (SQLAlchemyError, OSError, sqlite3.Error) as exc:
            log.warning("response cache read failed: %s", type(exc).__name__)
            return None
        if sealed is None:
            return None
        try:
            return decode(self._keyring.open(sealed, _associated(key)))
        except (CryptoError, CorruptEntry) as exc:
            # A key no longer configured, or bytes of another version: served as a miss, replaced.
            log.warning("a response cache entry cannot be opened: %s", exc)
            return None

    def close(self) -> None:
        self._reader.close()

    async def put(self, key: bytes, answer: CachedAnswer, ttl_s: int) -> None:
        sealed = self._keyring.seal(encode(answer), _associated(key))
        if len(sealed) > self.max_bytes:
            return  # larger than the whole cache: kept nowhere
        now = self._clock()
        values = {
            "key": key,
            "sealed": sealed,
            "size": len(sealed),
            "created_at": now,
            "expires_at": now + timedelta(seconds=ttl_s),
        }
        upsert = self._insert(_TABLE).values(**values)
        upsert = upsert.on_conflict_do_update(
            index_elements=[_TABLE.c.key],
            set_={name: upsert.excluded[name] for name in ("sealed", "size", "created_at", "expires_at")},
        )
        try:
            async with self._engine.begin() as conn:
                await conn.execute(upsert)
            await self._evict(now)
        except (SQLAlchemyError, OSError) as exc:
            log.warning("response cache write failed: %s", type(exc).__name__)

    async def _evict(self, now: datetime) -> None:
        """Expired entries go, then the oldest until the stored size is within the bound. Replicas
        may evict at once: each deletes rows it read, and a row deleted twice is deleted once."""
        async with self._engine.begin() as conn:
            await conn.execute(delete(_TABLE).where(_TABLE.c.expires_at <= now))
            total = (await conn.execute(select(func.coalesce(func.sum(_TABLE.c.size), 0)))).scalar_one()
        while total > self.max_bytes:
            async with self._engine.begin() as conn:
                rows = (
                    await conn.execute(
                        select(_TABLE.c.key, _TABLE.c.size)
                        .order_by(_TABLE.c.created_at, _TABLE.c.key)
                        .limit(EVICT_BATCH)
                    )
                ).all()
                if not rows:
                    return
                doomed: list[bytes] = []
                for key, size in rows:
                    if total <= self.max_bytes:
                        break
                    doomed.append(key)
                    total -= size
                await conn.execute(delete(_TABLE).where(_TABLE.c.key.in_(doomed)))
