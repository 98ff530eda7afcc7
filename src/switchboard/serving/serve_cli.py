"""`switchboard serve`: check what would fail, say what it serves from, then hand over to uvicorn."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os

from switchboard import API_VERSION
from switchboard.logging_setup import configure_logging, flush_all, hold_early_records
from switchboard.settings import Settings, load_settings
from switchboard.startup_errors import check_database, shown_url

log = logging.getLogger("switchboard.serve")


def _database(settings: Settings) -> str:
    if settings.is_sqlite:
        path = settings.database_url.split("///", 1)[-1]
        return f"sqlite at {os.path.abspath(path) if path != ':memory:' else path}"
    return shown_url(settings.database_url)


def announce(settings: Settings, url: str, workers: int) -> None:
    """The lines an operator reads first: where the data, the catalog and the database are."""
    config = settings.config_path.resolve() if settings.config_path else None
    if config is None or not config.exists():
        log.warning(
            "no config file at %s: the catalog is empty (start from the checkout, or set SWITCHBOARD_CONFIG)",
            config,
        )
    models = len(settings.config.models)
    log.info(
        "switchboard %s: data dir %s, config %s (%d models), database %s",
        API_VERSION,
        settings.data_dir.resolve(),
        config,
        models,
        _database(settings),
    )
    log.info("starting %d worker%s on %s", workers, "" if workers == 1 else "s", url)


def run(args: argparse.Namespace) -> int:
    from switchboard.serving.supervisor import bind, listen_url, serve

    hold_early_records()  # the generated-secret warning, written once the format is known
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    asyncio.run(check_database(settings.database_url))
    sock = bind(args.host, args.port)
    url = listen_url(args.host, args.port)
    # Read by the workers' settings, for their ready line.
    os.environ["SWITCHBOARD_LISTEN_URL"] = url
    announce(settings, url, args.workers)
    flush_all()
    return serve(sock, args.host, args.port, args.workers)
