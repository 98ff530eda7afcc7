"""Runs uvicorn with one or several workers and turns a start that failed into a non-zero exit."""

from __future__ import annotations

import contextlib
import errno
import socket
import sys
from typing import Any

from switchboard.startup_errors import StartupError

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
        "log_config": None,  # its lines go through the gateway's handler (logging_setup.py): JSON stays JSON
        "timeout_graceful_shutdown": 30,
    }


def listen_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before any worker starts, so a taken port fails first and alone."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                f"port {port} on {host} is in use (another switchboard?); "
                "stop it or choose another port with --port"
            ) from None
        if exc.errno == errno.EACCES:
            raise StartupError(
                f"no permission to listen on port {port}; choose one above 1023 with --port"
            ) from None
        raise StartupError(
            f"cannot listen on {host}:{port}: {exc.strerror} (check --host and --port)"
        ) from None
    sock.set_inheritable(True)
    return sock


def serve(sock: socket.socket, host: str, port: int, workers: int) -> int:
    """Serves until stopped; 0 after a requested stop, `STARTUP_FAILURE` when a worker could not start.

    Each worker brings the schema to the latest migration itself (`db/migrate.py` makes them take
    turns), so workers start at once instead of after a separate migration process.
    """
    import uvicorn

    if workers == 1:
        # What uvicorn.run does for one worker, on the socket bound above.
        server = uvicorn.Server(uvicorn.Config(APP, **_options(host, port, workers)))
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
        return 0 if server.started else STARTUP_FAILURE
    from switchboard.observability.workers import MetricsMultiprocess, shared_metrics

    # What uvicorn.run does for several workers, keeping hold of the supervisor to read how they ended:
    # uvicorn stops every worker when one fails to start, but returns as after a requested stop.
    config = uvicorn.Config(APP, **_options(host, port, workers))
    with shared_metrics():  # /metrics adds up every worker's values (observability/workers.py)
        supervisor = MetricsMultiprocess(config, sockets=[sock])
        supervisor.run()
    if any(process.exitcode == STARTUP_FAILURE for process in supervisor.processes):
        print("switchboard: a worker could not start (its error is above); stopped", file=sys.stderr)
        return STARTUP_FAILURE
    return 0
