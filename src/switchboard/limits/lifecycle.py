"""Limits at start: the config file's `limits:` written to the database (economies are synced before)."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from switchboard.config_file import ConfigError, locate
from switchboard.limits.config_sync import sync_config_limits
from switchboard.settings import Settings

log = logging.getLogger("switchboard.limits")


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    try:
        async with app.state.sessionmaker() as session, session.begin():
            count = await sync_config_limits(session, settings.config)
    except ConfigError as exc:
        raise ConfigError(locate(settings.config_path, str(exc))) from None
    if count:
        log.info("%d limits from the config file", count)


async def shutdown(app: FastAPI) -> None:
    pass
