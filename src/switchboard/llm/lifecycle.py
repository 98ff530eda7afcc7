"""The model-call pipeline at start: the limits every call is checked against, the leases of its
holds, its upkeep, and the typed services every call is given (llm/services.py)."""

from __future__ import annotations

import asyncio
import contextlib
import functools

from fastapi import FastAPI

from switchboard.kit.worker_counters import WorkerCounters
from switchboard.limits.allowances import Allowances
from switchboard.limits.leases import HoldLeases
from switchboard.limits.registry import LimitRegistry
from switchboard.llm.services import pipeline_of
from switchboard.llm.upkeep import UPKEEP_SECONDS, upkeep_forever
from switchboard.observability import events
from switchboard.observability.metrics import Metrics
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
    # Short leases (tests) are recovered sooner.
    lease_seconds = app.state.settings.lease_seconds
    interval = min(UPKEEP_SECONDS, lease_seconds / 3)
    allowances = None
    if app.state.settings.limit_allowances:
        metrics = getattr(app.state, "metrics", None)
        if not isinstance(metrics, Metrics):
            metrics = None
        allowances = Allowances(
            app.state.write_transactions,
            lease_seconds,
            interval,
            on_grant=functools.partial(events.allowance_granted, metrics) if metrics else None,
        )
    pipeline = pipeline_of(app.state, registry, routing, HoldLeases(lease_seconds), allowances)
    app.state.pipeline = pipeline  # for the framework's routes (llm/router.py); app.py wires the fast path
    app.state.upkeep = asyncio.create_task(upkeep_forever(pipeline, interval), name="pipeline-upkeep")
    if allowances is not None:
        app.state.grants = asyncio.create_task(allowances.grant_forever(), name="allowance-grants")


async def shutdown(app: FastAPI) -> None:
    for name in ("upkeep", "grants"):
        task: asyncio.Task[None] | None = getattr(app.state, name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    pipeline = getattr(app.state, "pipeline", None)
    if pipeline is not None and pipeline.allowances is not None:
        await pipeline.allowances.close()  # free slots go back now, not when their lease runs out
    in_flight: WorkerCounters | None = getattr(app.state, "in_flight", None)
    if in_flight is not None:
        in_flight.close()
