"""Notices a client going away while its call waits or streams, and cancels the task serving it."""

from __future__ import annotations

import asyncio

from starlette.types import Receive


class ClientWatch:
    """Started by the task that serves the request; cancels that task on `http.disconnect`.

    Plain asyncio rather than an anyio task group: it runs once per model call.
    """

    __slots__ = ("_serving", "_watcher", "gone")

    def __init__(self, receive: Receive) -> None:
        serving = asyncio.current_task()
        assert serving is not None
        self._serving = serving
        self.gone = False
        self._watcher = asyncio.create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        self._serving.cancel()

    def ours(self) -> bool:
        """After a CancelledError: whether the client's leaving caused it (then it is absorbed)."""
        if self.gone:
            self._serving.uncancel()
        return self.gone

    def stop(self) -> None:
        self._watcher.cancel()
