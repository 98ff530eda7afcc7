"""The model-call pipeline at start: the limits every call is checked against, and crash recovery."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import FastAPI

from switchboard.limits.registry import LimitRegistry
from switchboard.llm.recovery import sweep_forever

# Dead calls are looked for this often, or more often when leases are short (tests).
SWEEP_SECONDS = 2.0


async def startup(app: FastAPI) -> None:
    registry = LimitRegistry(app.state.engine)
    await registry.start()
    app.state.limits = registry
    interval = min(SWEEP_SECONDS, app.state.settings.lease_seconds / 3)
    app.state.recovery = asyncio.create_task(sweep_forever(app.state, interval), name="call-recovery")


async def shutdown(app: FastAPI) -> None:
    task: asyncio.Task[None] | None = getattr(app.state, "recovery", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    registry: LimitRegistry | None = getattr(app.state, "limits", None)
    if registry is not None:
        await registry.close()
