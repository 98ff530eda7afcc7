"""The app factory uvicorn calls in each worker: the app built and started with the collector paused.

Importing, wiring and starting the app (the lifespan imports the domains' start-up modules) makes
some 200,000 long-lived objects and next to no garbage, yet the cyclic collector keeps scanning
them as they pile up: ~0.2 s of a worker's start. Paused until start-up ends, then frozen, those
objects also stay out of later full collections, each of which would otherwise walk all of them
(~0.1 s of CPU, in the middle of serving). The price: cyclic garbage among frozen objects is never
reclaimed (about a thousand objects when start-up ends).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from switchboard.startup_errors import one_line_startup_failures

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import Lifespan


def _resume_collector() -> None:
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _resuming_after(startup: Lifespan[Any]) -> Lifespan[Any]:
    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        try:
            async with startup(app) as state:
                _resume_collector()
                yield state
        finally:
            _resume_collector()  # when start-up failed

    return lifespan


def _bound_request_heads(settings: Any) -> None:
    from switchboard.server_protocol import HeadLimits, HttpToolsHeadHolding

    HttpToolsHeadHolding.limits = HeadLimits(
        timeout=settings.head_timeout_seconds,
        body_idle=settings.body_idle_timeout_seconds,
        body_total=settings.body_timeout_seconds,
        max_bytes=settings.max_head_bytes,
        max_line=settings.max_header_line_bytes,
        max_lines=settings.max_header_lines,
    )


def create_app() -> FastAPI:
    gc.disable()
    try:
        from switchboard.app import create_app as build
        from switchboard.logging_setup import hold_early_records

        hold_early_records()  # what settings log before logging is configured keeps the log's format

        app = build()
    except BaseException:
        gc.enable()
        raise
    _bound_request_heads(app.state.settings)
    app.router.lifespan_context = _resuming_after(app.router.lifespan_context)
    if not app.state.settings.debug:
        one_line_startup_failures(app.router)
    return app
