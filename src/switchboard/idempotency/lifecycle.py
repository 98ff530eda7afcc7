"""Start-up: the idempotency store on `app.state.idempotency` and a periodic purge of expired keys."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

from fastapi import FastAPI

from switchboard.idempotency.service import IdempotencyStore

log = logging.getLogger("switchboard.idempotency")
PURGE_INTERVAL_SECONDS = 600.0


async def _purge_forever(store: IdempotencyStore) -> None:
    # Jitter so that replicas started together do not all purge at the same moment.
    await asyncio.sleep(random.uniform(0, PURGE_INTERVAL_SECONDS / 10))
    while True:
        try:
            removed = await store.purge_expired()
            if removed:
                log.info("purged %d expired idempotency keys", removed)
        except Exception:
            log.warning("purging expired idempotency keys failed", exc_info=True)
        await asyncio.sleep(PURGE_INTERVAL_SECONDS)


async def startup(app: FastAPI) -> None:
    settings = app.state.settings
    store = IdempotencyStore(app.state.engine, settings.idempotency_ttl_seconds, settings.lease_seconds)
    app.state.idempotency = store
    app.state.idempotency_purge = asyncio.create_task(_purge_forever(store), name="idempotency-purge")


async def shutdown(app: FastAPI) -> None:
    task: asyncio.Task[None] = app.state.idempotency_purge
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await app.state.idempotency.close()
