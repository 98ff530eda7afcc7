"""Runs uvicorn with one or several workers and turns a start that failed into a non-zero exit."""

from __future__ import annotations

import sys
from typing import Any

APP = "switchboard.serving.factory:create_app"
STARTUP_FAILURE = 3  # uvicorn's exit status for an application that could not start


def _options(host: str, port: int, workers: int) -> dict[str, Any]:
    return {
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "loop": "uvloop",
        # uvicorn's httptools protocol, sending a response's head and body in one write
        "http": "switchboard.server_protocol:HttpToolsHeadHolding",
        "ws": "none",  # no WebSocket routes: spares each worker the import
        "access_log": False,
        "log_level": "warning",
        "timeout_graceful_shutdown": 30,
    }


def serve(host: str, port: int, workers: int) -> int:
    """Serves until stopped; 0 after a requested stop, `STARTUP_FAILURE` when a worker could not start.

    Each worker brings the schema to the latest migration itself (`db/migrate.py` makes them take
    turns), so workers start at once instead of after a separate migration process.
    """
    import uvicorn

    if workers == 1:
        uvicorn.run(APP, **_options(host, port, workers))  # exits with STARTUP_FAILURE itself
        return 0
    from uvicorn.supervisors import Multiprocess

    # What uvicorn.run does for several workers, keeping hold of the supervisor to read how they ended:
    # uvicorn stops every worker when one fails to start, but returns as after a requested stop.
    config = uvicorn.Config(APP, **_options(host, port, workers))
    supervisor = Multiprocess(config, sockets=[config.bind_socket()])
    supervisor.run()
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        print("switchboard: a worker could not start (its error is above); stopped", file=sys.stderr)
        return STARTUP_FAILURE
    return 0
