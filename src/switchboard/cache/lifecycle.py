"""Builds the response cache's store at start (`app.state.cache`), sealing with the credential key ring."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard.cache.store import CacheStore
from switchboard.settings import Settings


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    app.state.cache = CacheStore(
        app.state.engine,
        app.state.credentials.keyring,
        int(settings.cache_max_mb * 1024 * 1024),
        metrics=getattr(app.state, "metrics", None),
        transactions=app.state.write_transactions,
    )


async def shutdown(app: FastAPI) -> None:
    store: CacheStore | None = getattr(app.state, "cache", None)
    if store is not None:
        store.close()
