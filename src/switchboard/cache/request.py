"""Whether a call is cached and for how long (catalog and `x-switchboard-cache`), and its cache key."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

from switchboard.cache.entry import CachedAnswer
from switchboard.config_file import MAX_CACHE_TTL_S
from switchboard.credentials.store import CredentialRef
from switchboard.errors import BadRequest

HEADER = "x-switchboard-cache"
NO_STORE = "no-store"
_TTL = re.compile(r"ttl=([0-9]{1,9})")
# Request fields that never shape the answer: how it is delivered, and who it is for in the
# provider's logs. Every other field is part of the key, whatever the gateway knows of it.
NOT_IN_KEY = frozenset(
    {
        "stream",
        "stream_options",
        "user",
        "metadata",
        "store",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
    }
)
# The surfaces whose answers are cached; others ignore the header (embeddings, text completions).
CACHED_ENDPOINTS = frozenset({"chat.completions", "messages", "responses"})
# Changing the canonical form changes every key: old entries are then never hit and age out.
KEY_VERSION = 1


def header_ttl(value: str) -> int | None:
    """The header's word: a TTL in seconds, or 0 for `no-store`; a malformed value is a 400."""
    text = value.strip().lower()
    if text == NO_STORE:
        return 0
    found = _TTL.fullmatch(text)
    ttl = int(found.group(1)) if found else 0
    if not 1 <= ttl <= MAX_CACHE_TTL_S:
        raise BadRequest(
            f"{HEADER} must be `no-store` or `ttl=<seconds>` with 1 to {MAX_CACHE_TTL_S} seconds",
            param=HEADER,
        )
    return ttl


def body_digest(endpoint: str, stream: bool, body: dict[str, Any], provider_headers: bytes) -> bytes:
    """SHA-256 of the canonical request: the surface, the answer's form (JSON or a stream: each is
    stored as the client got it), every field that shapes the answer with sorted keys, and the header
    lines a Messages call passes to its provider (anthropic-version, anthropic-beta)."""
    # `model` is in the scope half of the key (entry_key), with the provider.
    fields = {name: value for name, value in body.items() if name not in NOT_IN_KEY and name != "model"}
    canonical = orjson.dumps(
        [KEY_VERSION, endpoint, "sse" if stream else "json", fields, provider_headers.decode("latin-1")],
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(canonical).digest()


def entry_key(digest: bytes, provider: str, model: str, credential: CredentialRef) -> bytes:
    """The key of an answer `credential` paid for: only callers who may spend that credential (its
    user, its room's members, anyone for a deployment key) reach it, and a key stored twice by one
    scope (another base_url) is another entry."""
    scope = [
        provider,
        model,
        credential.scope,
        str(credential.owner_id or ""),
        str(credential.id or ""),
        credential.base_url or "",
        credential.api_key_env or "",
    ]
    return hashlib.sha256(digest + orjson.dumps(scope)).digest()


@dataclass(frozen=True, slots=True)
class CacheTicket:
    """A call the cache applies to: its TTL and request digest, and the stored answer on a hit."""

    ttl_s: int
    digest: bytes
    key: bytes
    hit: CachedAnswer | None = None
