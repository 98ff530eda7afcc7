"""A stream whose client leaves before the response starts is still settled, though its producer never ran."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from switchboard.llm.sse_response import SSEResponse


async def _gone() -> dict[str, Any]:
    return {"type": "http.disconnect"}


async def test_a_client_gone_before_the_response_starts_settles_through_unstarted() -> None:
    ran: list[str] = []
    settled = asyncio.Event()

    async def events() -> AsyncIterator[bytes]:
        # An async generator that is closed before its first step never runs this body, nor its finally.
        try:
            ran.append("body")
            yield b"data: {}\n\n"
        finally:
            ran.append("finally")

    async def unstarted() -> None:
        settled.set()

    async def slow_send(message: dict[str, Any]) -> None:
        for _ in range(5):  # the watch sees the disconnect and cancels the serving task meanwhile
            await asyncio.sleep(0)

    response = SSEResponse(events(), headers={}, unstarted=unstarted)
    await response({"type": "http"}, _gone, slow_send)

    assert settled.is_set()
    assert ran == []


async def test_a_stream_that_started_is_settled_by_its_own_producer_only() -> None:
    calls: list[str] = []

    async def events() -> AsyncIterator[bytes]:
        yield b"data: {}\n\n"

    async def unstarted() -> None:
        calls.append("unstarted")

    async def waiting() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client stays
        raise AssertionError("unreachable")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await SSEResponse(events(), headers={}, unstarted=unstarted)({"type": "http"}, waiting, send)

    assert calls == []
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body", "http.response.body"]
