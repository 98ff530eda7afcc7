"""The model-call pipeline at start: the limits every call is checked against, the leases of its
holds, its upkeep, and the typed services every call is given (llm/services.py)."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import FastAPI

from switchboard.kit.worker_counters import WorkerCounters
from switchboard.limits.leases import HoldLeases
from switchboard.limits.registry import LimitRegistry
from switchboard.llm.services import pipeline_of
from switchboard.llm.upkeep import UPKEEP_SECONDS, upkeep_forever
from switchboard.observability.workers import shared_directory
from switchboard.routing.health import RouteHealth

IN_FLIGHT_FILE = "routing-in-flight.bin"


async def startup(app: FastAPI) -> None:
    registry = LimitRegistry(app.state.engine)
    await registry.reload()
    app.state.limits = registry  # the limits' routes tell it of every change
    # Cooldowns and calls in flight per route (SPEC §14); calls in flight are the whole server's.
    directory = shared_directory()
    in_flight = WorkerCounters(directory / IN_FLIGHT_FILE) if directory is not None else None
    app.state.in_flight = in_flight
    routing = RouteHealth(in_flight)
    pipeline = pipeline_of(app.state, registry, routing, HoldLeases(app.state.settings.lease_seconds))
    app.state.pipeline = pipeline  # for the framework's routes (llm/router.py); app.py wires the fast path
    # Short leases (tests) are recovered sooner.
    interval = min(UPKEEP_SECONDS, pipeline.settings.lease_seconds / 3)
    app.state.upkeep = asyncio.create_task(upkeep_forever(pipeline, interval), name="pipeline-upkeep")


async def shutdown(app: FastAPI) -> None:
    task: asyncio.Task[None] | None = getattr(app.state, "upkeep", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    in_flight: WorkerCounters | None = getattr(app.state, "in_flight", None)
    if in_flight is not None:
        in_flight.close()
