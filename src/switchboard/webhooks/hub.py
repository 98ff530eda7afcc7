"""`app.state.webhooks`: what this process knows of the subscriptions, and the events the pipeline
hands over (observability/events.py), queued for the dispatcher's task.

The pipeline pays a set lookup per event when no webhook wants it: the set of subscribed event types
is read from the database by the dispatcher every RELOAD_SECONDS (on every replica; a webhook written
on this process applies at once), never per call. A wanted event costs the call an append to a list;
the database work (marks, outbox rows) happens in the dispatcher, off the call's path.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from switchboard.auth.principal import Principal
from switchboard.config_file import ModelEntry
from switchboard.credentials.store import CredentialRef
from switchboard.errors import LimitRefused
from switchboard.kit.clock import utcnow
from switchboard.limits.registry import LimitRegistry
from switchboard.limits.rules import EPOCH, Limit, window_start
from switchboard.webhooks.events import BUDGET_THRESHOLD, CREDENTIAL_REJECTED, LIMIT_REFUSED

RELOAD_SECONDS = 2.0
SEEN_KEPT = 10_000  # keys of events already handed over; past that the memory starts over


class Call(Protocol):
    """A model call as the pipeline holds it (llm/context.CallRequest): what an event names of it."""

    @property
    def principal(self) -> Principal: ...
    @property
    def economy_id(self) -> uuid.UUID: ...
    @property
    def room_id(self) -> uuid.UUID | None: ...
    @property
    def selector(self) -> str: ...


class Attempt(Protocol):
    """One attempt of a call (llm/call_attempt.Attempt): its call, model and credential."""

    @property
    def request(self) -> Call: ...
    @property
    def model(self) -> ModelEntry: ...
    @property
    def credential(self) -> CredentialRef: ...


@dataclass(frozen=True)
class Pending:
    """An event to send once per mark (`subject`, `window`), about economy `economy_id`."""

    event_type: str
    subject: str
    window: datetime
    economy_id: uuid.UUID | None
    data: dict[str, Any]
    threshold: int = 0


def window_key(limit: Limit, now: datetime) -> datetime:
    """The window an event of this limit belongs to: its calendar day or month; for a rolling window
    the clock minute or hour; EPOCH for `total`."""
    if limit.window == "minute":
        return now.replace(second=0, microsecond=0)
    if limit.window == "hour":
        return now.replace(minute=0, second=0, microsecond=0)
    return window_start(limit.window, now) if limit.window != "total" else EPOCH


def limit_scope(limit: Limit) -> uuid.UUID | None:
    """The economy whose webhooks hear of this limit: its own, or the one it is narrowed to."""
    if limit.subject_type == "economy":
        return uuid.UUID(limit.subject_id)
    return limit.economy_id


def limit_data(limit: Limit) -> dict[str, Any]:
    return {
        "id": str(limit.id),
        "subject_type": limit.subject_type,
        "subject_id": limit.subject_id,
        "economy_id": str(limit.economy_id) if limit.economy_id is not None else None,
        "metric": limit.metric,
        "window": limit.window,
        "amount": str(limit.amount),
    }


@dataclass
class WebhookHub:
    limits: LimitRegistry | None = None  # the pipeline's (llm/lifecycle.py), for a refusal's limit
    wanted: frozenset[str] = frozenset()
    endpoints: int = 0  # active or not: their outbox rows still go out
    stale: bool = True
    pending: list[Pending] = field(default_factory=list)
    settled: dict[uuid.UUID, Limit] = field(default_factory=dict)  # cost limits to check for thresholds
    _seen: set[tuple[str, str, datetime]] = field(default_factory=set)
    woken: asyncio.Event = field(default_factory=asyncio.Event)

    def changed(self) -> None:
        """A webhook was written on this process: reload before anything else."""
        self.stale = True
        self.woken.set()

    def wake(self) -> None:
        self.woken.set()

    def _once(self, pending: Pending) -> None:
        key = (pending.event_type, pending.subject, pending.window)
        if key in self._seen:
            return
        if len(self._seen) >= SEEN_KEPT:
            self._seen.clear()
        self._seen.add(key)
        self.pending.append(pending)
        self.woken.set()

    def limit_refused(self, call: Call, error: LimitRefused) -> None:
        if LIMIT_REFUSED not in self.wanted or self.limits is None:
            return
        try:
            limit = self.limits.get(uuid.UUID(str(error.openai_extra.get("limit_id"))))
        except ValueError:
            return
        if limit is None:
            return
        window = window_key(limit, utcnow())
        data = {
            "limit": limit_data(limit),
            "code": error.openai_code or error.code,
            "window_start": window.isoformat(),
            "user_id": str(call.principal.user_id),
            "api_key_id": str(call.principal.api_key_id) if call.principal.api_key_id else None,
            "economy_id": str(call.economy_id),
            "model": call.selector,
        }
        self._once(Pending(LIMIT_REFUSED, str(limit.id), window, limit_scope(limit), data))

    def credential_rejected(self, attempt: Attempt) -> None:
        """`attempt`: the one whose credential the provider rejected."""
        if CREDENTIAL_REJECTED not in self.wanted:
            return
        credential, call = attempt.credential, attempt.request
        now = utcnow()
        hour = now.replace(minute=0, second=0, microsecond=0)
        subject = str(credential.id) if credential.id is not None else f"deployment:{credential.provider}"
        data = {
            "credential_id": str(credential.id) if credential.id is not None else None,
            "scope": credential.scope,
            "provider": credential.provider,
            "model": attempt.model.model,
            "economy_id": str(call.economy_id),
            "user_id": str(call.principal.user_id),
            "room_id": str(call.room_id) if call.room_id is not None else None,
            "rejected_at": now.isoformat(),
        }
        self._once(Pending(CREDENTIAL_REJECTED, subject[:64], hour, call.economy_id, data))

    def cost_settled(self, limits: tuple[Limit, ...]) -> None:
        if BUDGET_THRESHOLD not in self.wanted:
            return
        for limit in limits:
            if limit.metric == "cost" and limit.amount > 0:
                self.settled[limit.id] = limit
        self.woken.set()
