"""The response cache's hook where an answer completes: store it, if it is complete and successful."""

from __future__ import annotations

from typing import Protocol

from switchboard.cache.entry import CachedAnswer
from switchboard.cache.request import CacheTicket, entry_key
from switchboard.cache.store import CacheStore
from switchboard.credentials.store import CredentialRef
from switchboard.upstream.types import StreamEvent, Usage


class _Model(Protocol):
    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...


class AnsweredCall(Protocol):
    """What the cache reads of the call an answer completed: a protocol, so the cache needs no import
    of the pipeline above it (llm/context.PreparedCall satisfies it)."""

    @property
    def cache(self) -> CacheTicket | None: ...

    @property
    def model(self) -> _Model: ...

    @property
    def credential(self) -> CredentialRef: ...


async def remember(store: CacheStore | None, call: AnsweredCall, answer: CachedAnswer) -> None:
    """Stores the answer under the scope of the attempt that gave it: after a fallback, that
    attempt's model and credential, not the first route's."""
    ticket = call.cache
    if ticket is None or store is None:
        return
    key = entry_key(ticket.digest, call.model.provider, call.model.model, call.credential)
    await store.put(key, answer, ticket.ttl_s)


async def remember_json(store: CacheStore | None, call: AnsweredCall, body: bytes, usage: Usage) -> None:
    await remember(store, call, CachedAnswer(usage=usage, body=body))


async def remember_stream(
    store: CacheStore | None, call: AnsweredCall, events: list[StreamEvent], end: bytes, usage: Usage
) -> None:
    await remember(store, call, CachedAnswer(usage=usage, events=tuple(events), end=end, stream=True))
