"""The audit trail at start (the flush hook installed, retention started) and at stop."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard.audit import capture, retention
from switchboard.settings import Settings


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    capture.install()
    retention.start(app, settings.audit_retention_days)


async def shutdown(app: FastAPI) -> None:
    await retention.stop(app)
