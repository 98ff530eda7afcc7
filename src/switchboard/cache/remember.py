"""The response cache's hook where an answer completes: store it, if it is complete and successful."""

from __future__ import annotations

from typing import TYPE_CHECKING

from switchboard.cache.entry import CachedAnswer
from switchboard.cache.request import entry_key
from switchboard.cache.store import CacheStore
from switchboard.upstream.types import StreamEvent, Usage

if TYPE_CHECKING:
    from switchboard.llm.context import PreparedCall


async def remember(store: CacheStore | None, call: PreparedCall, answer: CachedAnswer) -> None:
    """Stores the answer under the scope of the attempt that gave it: after a fallback, that
    attempt's model and credential, not the first route's."""
    ticket = call.cache
    if ticket is None or store is None:
        return
    key = entry_key(ticket.digest, call.model.provider, call.model.model, call.credential)
    await store.put(key, answer, ticket.ttl_s)


async def remember_json(store: CacheStore | None, call: PreparedCall, body: bytes, usage: Usage) -> None:
    await remember(store, call, CachedAnswer(usage=usage, body=body))


async def remember_stream(
    store: CacheStore | None, call: PreparedCall, events: list[StreamEvent], end: bytes, usage: Usage
) -> None:
    await remember(store, call, CachedAnswer(usage=usage, events=tuple(events), end=end, stream=True))
