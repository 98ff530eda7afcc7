"""The attempt loop: walks a call's plan (routing/plan.py) until an attempt answers (SPEC §14).

The relay says how to ask the provider once; this module decides what follows a failure: the same
route again (connect errors and timeouts, up to `retries` more times after a short jittered pause),
the next route (5xx, 429, 529, a rejected key), or the end of the call (any other failure, the
client leaving, no route left). Every attempt the call moves on from is recorded on its way out; the
last one is settled (ledger.settle) by the relay on success, or here on failure.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from switchboard.errors import SwitchboardError, UpstreamCredentialRejected, error_code_of
from switchboard.llm.call_attempt import Attempt, next_attempt
from switchboard.llm.ledger import Reservation, record_attempt, settle
from switchboard.llm.outcomes import USAGE_ESTIMATED, build_outcome, prompt_estimate
from switchboard.llm.services import Pipeline
from switchboard.metering.outcome import CallOutcome
from switchboard.observability import events
from switchboard.routing.failures import Verdict, final_error, verdict_of
from switchboard.routing.route import Route
from switchboard.upstream.types import Usage

T = TypeVar("T")
RETRY_PAUSE_S = 0.1  # the pause before trying the same route again, jittered ±50 %
ATTEMPTS_HEADER = "x-switchboard-attempts"


class Attempts:
    """One per call; `current` is the attempt under way (its route, model, credential and body)."""

    __slots__ = ("_errors", "_index", "_pending", "_pipeline", "_tries", "current", "reservation")

    def __init__(self, pipeline: Pipeline, first: Attempt, reservation: Reservation) -> None:
        self._pipeline = pipeline
        self.reservation = reservation
        self._index = 0
        self._tries = 0  # tries of the current route after its first
        self._errors: list[BaseException] = []
        self._pending: CallOutcome | None = None  # the failed attempt before this one, not yet recorded
        self.current: Attempt = first

    @property
    def route(self) -> Route:
        return self.current.route

    async def walk(self, ask: Callable[[], Awaitable[T]]) -> T:
        """`ask()`'s answer from the first attempt that gives one; raises the call's final failure
        once it has been settled. The caller ends the route with `done()` when the answer is out."""
        while True:
            self._begin()
            try:
                if self._pending is not None:
                    outcome, self._pending = self._pending, None
                    await record_attempt(self._pipeline, self.reservation, outcome, self.current)
                return await ask()
            except BaseException as raised:
                error = raised
                if await self._failed(error):
                    continue
                raise await self._give_up(error) from None

    def done(self, error: BaseException | None = None) -> None:
        """The answer is out (or broke off after its first byte): the route's health learns how it went."""
        routing = self._pipeline.routing
        routing.ended(self.route)
        if error is None:
            routing.succeeded(self.route)
            return
        self._attempt_failed(error)
        verdict = verdict_of(error)
        if verdict is not Verdict.STOP:
            routing.failed(self.route, verdict, error)

    def _attempt_failed(self, error: BaseException) -> None:
        events.attempt_failed(self._pipeline.metrics, self.current, error)
        if isinstance(error, UpstreamCredentialRejected) and self._pipeline.webhooks is not None:
            self._pipeline.webhooks.credential_rejected(self.current)

    def _begin(self) -> None:
        if self._errors:  # a later attempt: the same route again, or the next
            reservation = self.reservation
            route = reservation.routes[self._index]
            self.current = next_attempt(self.current, route, reservation.gateway_cap)
        self._pipeline.routing.started(self.current.route)
        events.attempt_started(self.current)

    async def _failed(self, error: BaseException) -> bool:
        """Whether another attempt follows this failed one."""
        routing, route = self._pipeline.routing, self.route
        routing.ended(route)
        self._attempt_failed(error)
        if isinstance(error, asyncio.CancelledError):
            return False
        verdict = verdict_of(error)
        if verdict is not Verdict.STOP:
            routing.failed(route, verdict, error)
        self._errors.append(error)
        pause = 0.0
        if verdict is Verdict.STOP:
            return False
        if verdict is Verdict.RETRY and self._tries < route.settings.retries:
            self._tries += 1
            pause = RETRY_PAUSE_S * random.uniform(0.5, 1.5)  # jitter, not a secret
        elif self._index + 1 < len(self.reservation.routes):
            self._index += 1
            self._tries = 0
        else:
            return False
        self._pending = build_outcome(
            self.current, status="error", usage=None, error_code=error_code_of(error)
        )
        if pause:
            try:
                await asyncio.sleep(pause)
            except asyncio.CancelledError:
                # The client left during the pause: the failed attempt is the call's last.
                outcome, self._pending = self._pending, None
                with anyio.CancelScope(shield=True):
                    await settle(self._pipeline, self.current, self.reservation, outcome)
                raise
        return True

    async def _give_up(self, error: BaseException) -> BaseException:
        """Settles the call with its last attempt's record; returns what the client gets."""
        cancelled = isinstance(error, asyncio.CancelledError)
        if cancelled:
            # The client left while the attempt was under way: the provider has (most likely) the
            # prompt, and will bill it, so the record carries its estimate, which limits count too.
            usage = Usage(prompt_tokens=prompt_estimate(self.current.body))
            outcome = build_outcome(
                self.current,
                status="cancelled",
                usage=usage,
                error_code=USAGE_ESTIMATED,
                usage_estimated=True,
            )
        else:
            outcome = build_outcome(self.current, status="error", usage=None, error_code=error_code_of(error))
        # No stored answer: the idempotency key is released, so the call may be tried again.
        with anyio.CancelScope(shield=True):
            await settle(self._pipeline, self.current, self.reservation, outcome)
        if cancelled or not self._errors:
            return error
        final = final_error(self._errors)
        if isinstance(final, SwitchboardError):
            final.headers[ATTEMPTS_HEADER] = str(self.current.number)
        return final
