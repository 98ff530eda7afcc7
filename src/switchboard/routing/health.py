"""What this process knows of each route's health: calls in flight, failures in a row, cooldowns.

In memory and per process (each replica learns on its own): a cooldown only saves attempts that
would likely fail, so losing it on a restart costs a few failed attempts, never a wrong answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from switchboard.credentials.store import CredentialRef, CredentialStore
from switchboard.kit.worker_counters import WorkerCounters
from switchboard.routing.failures import Verdict, cooldown_of
from switchboard.routing.route import PoolKey, Route, credential_key

FAILURES_TO_COOL = 3  # in a row; two leave a route first in line (SPEC §14)
MAX_ENTRIES = 10_000  # callers can name any model: the state stays bounded
FORGET_AFTER_S = 24 * 3600.0
_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(slots=True)
class _Failing:
    in_a_row: int = 0
    last_at: float = 0.0
    cooled_until: float = 0.0


class RouteHealth:
    """`shared`: in a server of several workers, the calls in flight of every worker (kit/worker_counters.py).
    Balancing on this process's calls alone sent a worker's call to a key another worker was
    streaming on: least busy means least busy in the whole server."""

    def __init__(self, shared: WorkerCounters | None = None) -> None:
        self._failing: dict[tuple[Hashable, str], _Failing] = {}
        self._rejected: dict[Hashable, tuple[bytes, float]] = {}  # credential → (its version, when)
        self._in_flight: dict[Hashable, int] = {}
        self._turns: dict[PoolKey, int] = {}
        self._shared = shared if shared is not None and shared.claimed else None

    # --- balancing -------------------------------------------------------------------------------
    def balanced(self, pool: PoolKey, refs: Sequence[CredentialRef]) -> list[CredentialRef]:
        """The credentials of one scope, least busy first; ties rotate from call to call."""
        turn = self._turns.get(pool, 0)
        if len(self._turns) >= MAX_ENTRIES and pool not in self._turns:
            self._turns.clear()
        self._turns[pool] = turn + 1
        start = turn % len(refs)
        rotated = [*refs[start:], *refs[:start]]
        shared = self._shared
        if shared is not None:  # the calls of every worker of this server
            rotated.sort(key=lambda ref: shared.total(credential_key(ref)))  # stable
        elif self._in_flight:
            rotated.sort(key=lambda ref: self._in_flight.get(credential_key(ref), 0))  # stable
        return rotated

    def started(self, route: Route) -> None:
        if route.pool is not None:  # only pooled credentials are balanced, so only they are counted
            key = credential_key(route.credential)
            if self._shared is not None:
                self._shared.add(key, 1)
                return
            self._in_flight[key] = self._in_flight.get(key, 0) + 1

    def ended(self, route: Route) -> None:
        if route.pool is not None:
            key = credential_key(route.credential)
            if self._shared is not None:
                self._shared.add(key, -1)
                return
            left = self._in_flight.get(key, 1) - 1
            if left > 0:
                self._in_flight[key] = left
            else:
                self._in_flight.pop(key, None)

    # --- failures and cooldowns --------------------------------------------------------------------
    def failed(self, route: Route, verdict: Verdict, error: BaseException) -> None:
        now = time.monotonic()
        if verdict is Verdict.REJECTED:
            self._prune(self._rejected, lambda value: value[1], now)
            version = CredentialStore.version(route.credential)
            self._rejected[credential_key(route.credential)] = (version, now)
            return
        key = (credential_key(route.credential), route.model.key)
        failing = self._failing.get(key)
        if failing is None:
            self._prune(self._failing, lambda value: value.last_at, now)
            failing = self._failing[key] = _Failing()
        failing.in_a_row += 1
        failing.last_at = now
        if verdict is Verdict.RATE_LIMITED:
            failing.cooled_until = now + cooldown_of(error, route.settings.cooldown_s)
        elif failing.in_a_row >= FAILURES_TO_COOL:
            failing.cooled_until = now + route.settings.cooldown_s

    def succeeded(self, route: Route) -> None:
        if self._failing:
            self._failing.pop((credential_key(route.credential), route.model.key), None)

    def usable(self, routes: list[Route]) -> list[Route]:
        """The routes not cooling down, in order; when every one is, the least recently failed."""
        if not self._failing and not self._rejected:
            return routes
        now = time.monotonic()
        ready: list[Route] = []
        oldest: tuple[float, Route] | None = None
        for route in routes:
            since = self._cooling_since(route, now)
            if since is None:
                ready.append(route)
            elif oldest is None or since < oldest[0]:
                oldest = (since, route)
        if ready or oldest is None:
            return ready
        return [oldest[1]]

    def _cooling_since(self, route: Route, now: float) -> float | None:
        """When the route last failed, if it is cooling down (or its key was rejected); else None."""
        ref = route.credential
        if self._rejected:
            rejected = self._rejected.get(credential_key(ref))
            if rejected is not None:
                if rejected[0] == CredentialStore.version(ref):
                    return rejected[1]
                del self._rejected[credential_key(ref)]  # its secret changed: eligible again
        failing = self._failing.get((credential_key(ref), route.model.key))
        if failing is not None and failing.cooled_until > now:
            return failing.last_at
        return None

    @staticmethod
    def _prune(entries: dict[_K, _V], last_at: Callable[[_V], float], now: float) -> None:
        if len(entries) < MAX_ENTRIES:
            return
        for key, value in list(entries.items()):
            if now - last_at(value) > FORGET_AFTER_S:
                del entries[key]
        if len(entries) >= MAX_ENTRIES:
            entries.clear()
