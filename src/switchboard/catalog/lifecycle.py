"""Builds the catalog once at start; a bad config is a start-up error naming the line."""

from __future__ import annotations

from fastapi import FastAPI

from switchboard.catalog.catalog import build_catalog
from switchboard.config_file import ConfigError, locate


async def startup(app: FastAPI) -> None:
    settings = app.state.settings
    try:
        app.state.catalog = build_catalog(settings.config)
    except ConfigError as exc:
        raise ConfigError(locate(settings.config_path, str(exc))) from None


async def shutdown(app: FastAPI) -> None:
    return None
