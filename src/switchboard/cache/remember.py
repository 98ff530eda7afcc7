"""The response cache's hook where an answer completes: store it, if it is complete and successful."""

from __future__ import annotations

from switchboard.cache.entry import CachedAnswer
from switchboard.cache.request import CacheTicket, entry_key
from switchboard.cache.store import CacheStore
from switchboard.config_file import ModelEntry
from switchboard.credentials.store import CredentialRef
from switchboard.upstream.types import StreamEvent, Usage


async def remember(
    store: CacheStore | None,
    ticket: CacheTicket,
    model: ModelEntry,
    credential: CredentialRef,
    answer: CachedAnswer,
) -> None:
    """Stores the answer under the scope of the attempt that gave it (its model and credential):
    after a fallback, that attempt's, not the first route's."""
    if store is None:
        return
    key = entry_key(ticket.digest, model.provider, model.model, credential)
    await store.put(key, answer, ticket.ttl_s)


async def remember_json(
    store: CacheStore | None,
    ticket: CacheTicket,
    model: ModelEntry,
    credential: CredentialRef,
    body: bytes,
    usage: Usage,
) -> None:
    await remember(store, ticket, model, credential, CachedAnswer(usage=usage, body=body))


async def remember_stream(
    store: CacheStore | None,
    ticket: CacheTicket,
    model: ModelEntry,
    credential: CredentialRef,
    events: list[StreamEvent],
    end: bytes,
    usage: Usage,
) -> None:
    await remember(
        store,
        ticket,
        model,
        credential,
        CachedAnswer(usage=usage, events=tuple(events), end=end, stream=True),
    )
