"""Slows down password guessing: every attempt on an email with recent failures waits first."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

BASE_DELAY_SECONDS = 0.2
MAX_DELAY_SECONDS = 8.0
FORGET_AFTER_SECONDS = 15 * 60
MAX_TRACKED_EMAILS = 10_000


@dataclass
class _Entry:
    failures: int = 0
    in_flight: int = 0
    last_failure: float = 0.0


@dataclass
class Attempt:
    succeeded: bool = False


class LoginThrottle:
    """Per-replica memory of failed logins, keyed by normalised email (known or not, alike).

    The wait comes before the password check, so a guesser cannot abandon a slow answer to learn
    it failed; attempts still in flight count as failures, so parallel guesses are slowed as well.
    The delay doubles per failure from 0.2 s up to 8 s and is forgotten 15 minutes after the last
    failure or at the first success.
    """

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    @staticmethod
    def delay(strikes: int) -> float:
        if strikes <= 0:
            return 0.0
        return float(min(BASE_DELAY_SECONDS * 2 ** min(strikes - 1, 16), MAX_DELAY_SECONDS))

    def _entry(self, key: str, now: float) -> _Entry:
        entry = self._entries.get(key)
        if entry is not None and entry.in_flight == 0 and now - entry.last_failure > FORGET_AFTER_SECONDS:
            entry.failures = 0
        if entry is None:
            if len(self._entries) >= MAX_TRACKED_EMAILS:
                self._prune(now)
            entry = self._entries[key] = _Entry()
        return entry

    def _prune(self, now: float) -> None:
        idle = sorted((e.last_failure, k) for k, e in self._entries.items() if e.in_flight == 0)
        stale = [k for last, k in idle if now - last > FORGET_AFTER_SECONDS]
        # Under a flood of distinct emails, drop the oldest tenth as well: memory stays bounded.
        doomed = stale if stale else [k for _, k in idle[: max(1, len(idle) // 10)]]
        for key in doomed:
            del self._entries[key]

    @asynccontextmanager
    async def attempt(self, key: str) -> AsyncIterator[Attempt]:
        entry = self._entry(key, time.monotonic())
        wait = self.delay(entry.failures + entry.in_flight)
        entry.in_flight += 1
        attempt = Attempt()
        try:
            if wait:
                await asyncio.sleep(wait)
            yield attempt
        finally:
            # A cancelled or failed attempt counts as a failure.
            entry.in_flight -= 1
            if attempt.succeeded:
                entry.failures = 0
            else:
                entry.failures += 1
                entry.last_failure = time.monotonic()
            if entry.in_flight == 0 and entry.failures == 0 and self._entries.get(key) is entry:
                del self._entries[key]
