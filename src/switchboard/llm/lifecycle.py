"""The model-call pipeline at start: the limits every call is checked against, the leases of its
holds, and its upkeep."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import FastAPI

from switchboard.limits.leases import HoldLeases
from switchboard.limits.registry import LimitRegistry
from switchboard.llm.upkeep import UPKEEP_SECONDS, upkeep_forever
from switchboard.routing.health import RouteHealth


async def startup(app: FastAPI) -> None:
    registry = LimitRegistry(app.state.engine)
    await registry.reload()
    app.state.limits = registry
    app.state.routing = RouteHealth()  # cooldowns and calls in flight per route (SPEC §14)
    app.state.hold_leases = HoldLeases(app.state.settings.lease_seconds)
    # Short leases (tests) are recovered sooner.
    interval = min(UPKEEP_SECONDS, app.state.settings.lease_seconds / 3)
    app.state.upkeep = asyncio.create_task(upkeep_forever(app.state, interval), name="pipeline-upkeep")


async def shutdown(app: FastAPI) -> None:
    task: asyncio.Task[None] | None = getattr(app.state, "upkeep", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
