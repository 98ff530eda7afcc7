"""Runs an ASGI app under uvicorn on a real loopback port, in a thread with its own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn


class ServerThread:
    def __init__(self, app: Any, *, name: str = "server", port: int = 0) -> None:
        self.app = app
        self.name = name
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            loop="asyncio",
            http="h11",
            timeout_graceful_shutdown=5,
            # Longer than the gateway keeps an idle provider connection (upstream/connection_pool's
            # KEEPALIVE_SECONDS), as providers' front ends are: with uvicorn's 5 s, a pooled connection
            # reused just as the server closes it ends the call with a 502 (never sent twice, SPEC §21),
            # which a loaded machine's pauses made happen in the middle of a test.
            timeout_keep_alive=75,
        )
        self.server = uvicorn.Server(config)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._error: BaseException | None = None

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.serve())
        except BaseException as exc:
            self._error = exc
        finally:
            self._close_loop()

    def _close_loop(self) -> None:
        """What asyncio.run does at the end: cancel what is left, then close. A task left pending on a
        closed loop is destroyed noisily at exit ("Task was destroyed but it is pending")."""
        assert self.loop is not None
        pending = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"{self.name} failed to start") from self._error
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} did not start within {timeout}s")
            time.sleep(0.01)
        return self

    @property
    def port(self) -> int:
        sockets = self.server.servers[0].sockets
        return int(sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call_soon(self, coro: Any, timeout: float = 30.0) -> Any:
        """Run a coroutine on the server's own loop (to reach its engine or state)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self, *, wait: bool = True) -> None:
        """`wait=False` only asks: the session's end asks every server first, then joins them, so that
        their graceful shutdowns overlap instead of adding up."""
        self.server.should_exit = True
        if wait:
            self.join()

    def join(self) -> None:
        self._thread.join(timeout=15)


@contextlib.contextmanager
def uvicorn_on_uvloop(app: Any, protocol: type[asyncio.Protocol]) -> Iterator[int]:
    """A real uvicorn on uvloop with the given HTTP protocol class (as `switchboard serve` runs it),
    in a thread; yields its port."""
    import uvloop

    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=protocol, lifespan="off", log_level="error")
    server = uvicorn.Server(config)
    loop = uvloop.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
