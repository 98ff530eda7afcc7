"""Builds the shared upstream client at start (attached as `app.state.upstream`) and closes it at stop."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.litellm_loader import stop_litellm_worker


async def startup(app: FastAPI) -> None:
    app.state.upstream = UpstreamClient.from_settings(app.state.settings)


async def shutdown(app: FastAPI) -> None:
    upstream: UpstreamClient | None = getattr(app.state, "upstream", None)
    if upstream is not None:
        await upstream.aclose()
    await stop_litellm_worker()
