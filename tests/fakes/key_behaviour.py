"""The fake provider's behaviour chosen by the API key it receives, for routing tests (SPEC §14).

A test gives each credential a key that says how the provider treats it, so one fake provider serves
pools of keys that fail in different ways at once, without scripts shared between tests:

  sk-fake-reject-…               401 (or the provider's own invalid-key answer): the key is refused
  sk-fake-busy-<seconds>-…       429 with `Retry-After: <seconds>`
  sk-fake-overloaded-…           overloaded: Anthropic's 529, 503 for the others
  sk-fake-down-…                 500
  sk-fake-flaky-<n>-…            the first <n> requests with this exact key lose their connection
                                 before the first byte (a reset); later ones are answered
  sk-fake-hang-…                 no answer at all, until the client gives up

Any other key is served as the test scripted it.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from tests.fakes.script import Kind, Script

_KEY = re.compile(r"^sk-fake-(reject|busy|overloaded|down|flaky|hang)(?:-(\d+(?:\.\d+)?))?-")
HANG_SECONDS = 300.0
OVERLOADED = {"anthropic": 529, "openai": 503, "gemini": 503}


@dataclass(frozen=True)
class Behaviour:
    script: Script | None = None  # what to answer instead of the test's script
    drop: bool = False


class KeyBehaviours:
    """Per fake provider: how many requests each flaky key has had."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def for_key(self, api_key: str | None, kind: Kind) -> Behaviour | None:
        match = _KEY.match(api_key or "")
        if match is None:
            return None
        name, number = match.group(1), match.group(2)
        if name == "reject":
            return Behaviour(Script(fail="invalid_key"))
        if name == "busy":
            return Behaviour(Script(fail="rate_limit", retry_after=number or None))
        if name == "overloaded":
            return Behaviour(Script(fail="server_error", status=OVERLOADED[kind], message="Overloaded"))
        if name == "down":
            return Behaviour(Script(fail="server_error"))
        if name == "hang":
            return Behaviour(Script(first_byte_delay=HANG_SECONDS))
        with self._lock:
            seen = self._seen[api_key or ""] = self._seen.get(api_key or "", 0) + 1
        return Behaviour(drop=True) if seen <= int(float(number or "1")) else None

    def requests_with(self, api_key: str) -> int:
        return self._seen.get(api_key, 0)


async def drop_connection(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> None:
    """Abort the socket under uvicorn (h11) before the response starts: the client sees a reset, not
    the 500 uvicorn would send for an app that fails or returns without answering."""
    cycle = getattr(receive, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise RuntimeError("the fake provider runs under a server whose transport it cannot reach")
    transport.abort()
    await asyncio.sleep(0)  # uvicorn marks the request disconnected, so it sends nothing after us
