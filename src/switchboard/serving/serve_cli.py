"""`switchboard serve`: check what would fail, say what it serves from, then hand over to uvicorn."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from pathlib import Path

from switchboard import API_VERSION
from switchboard.logging_setup import configure_logging, flush_all, hold_early_records
from switchboard.settings import Settings, load_settings
from switchboard.startup_errors import check_database, shown_url

log = logging.getLogger("switchboard.serve")


def _sqlite_file(settings: Settings) -> Path | None:
    """The SQLite database's file, absolute; None for PostgreSQL and an in-memory database."""
    if not settings.is_sqlite:
        return None
    path = settings.database_url.split("///", 1)[-1].split("?", 1)[0]
    return Path(os.path.abspath(path)) if path and path != ":memory:" else None


def _database(settings: Settings) -> str:
    if settings.is_sqlite:
        path = settings.database_url.split("///", 1)[-1]
        return f"sqlite at {os.path.abspath(path) if path != ':memory:' else path}"
    return shown_url(settings.database_url)


def announce(settings: Settings, url: str, workers: int, created: Path | None = None) -> None:
    """The lines an operator reads first: where the data, the catalog and the database are."""
    if created is not None:
        # SQLite creates whatever file it is pointed at: a typo in the path would otherwise look like
        # users and keys that vanished.
        log.warning(
            "created a new database at %s (SWITCHBOARD_DATABASE_URL); if you expected existing data, "
            "check that path",
            created,
        )
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


def _forget_multiproc_dir() -> None:
    """A PROMETHEUS_MULTIPROC_DIR from the environment is not used: it outlives the server (files of
    earlier processes, killed with streams open, or whose pid a restarted container reuses, would be
    added to this server's gauges). One worker keeps its metrics in memory; several get a fresh
    private directory (observability/workers.py). Runs before prometheus_client is imported, which
    reads the variable once, at import."""
    for name in ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir"):
        if os.environ.pop(name, None):
            log.warning(
                "%s is ignored: switchboard serve keeps its workers' metrics in a directory of its own",
                name,
            )


def run(args: argparse.Namespace) -> int:
    from switchboard.serving.supervisor import bind, listen_url, serve

    hold_early_records()  # the generated-secret warning, written once the format is known
    _forget_multiproc_dir()
    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    created = _sqlite_file(settings)
    if created is not None and created.exists():
        created = None
    asyncio.run(check_database(settings.database_url))
    sock = bind(args.host, args.port)
    url = listen_url(args.host, args.port)
    # Read by the workers' settings, for their ready line.
    os.environ["SWITCHBOARD_LISTEN_URL"] = url
    announce(settings, url, args.workers, created)
    flush_all()
    return serve(sock, args.host, args.port, args.workers)
