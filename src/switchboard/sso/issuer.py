"""The issuer's discovery document and signing keys: fetched when first needed, kept, and fetched
again on a `kid` we do not know, at most once a minute (SPEC §24), so that a flood of made-up key ids
cannot turn into a flood of requests to the identity provider."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, JWKRegistry, OKPKey, RSAKey

from switchboard.errors import ServiceUnavailable

log = logging.getLogger("switchboard.sso")

REFETCH_INTERVAL_SECONDS = 60.0
# A discovery document or key set is a few KiB; anything far larger is not one.
MAX_DOCUMENT_BYTES = 1024 * 1024
# After a failed fetch, calls are answered 503 at once for this long instead of each asking again.
FAILURE_PAUSE_SECONDS = 5.0
Key = RSAKey | ECKey | OKPKey


class IssuerUnavailable(ServiceUnavailable):
    default_message = "the identity provider could not be reached; try again shortly"


@dataclass(frozen=True)
class Metadata:
    """What the gateway uses of the discovery document."""

    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    end_session_endpoint: str | None = None


class Issuer:
    def __init__(
        self, issuer: str, client: httpx.AsyncClient, refetch_interval: float = REFETCH_INTERVAL_SECONDS
    ) -> None:
        self.issuer = issuer
        self._client = client
        self._refetch_interval = refetch_interval
        self._metadata: Metadata | None = None
        self._keys: dict[str | None, Key] | None = None
        self._last_refetch = float("-inf")  # monotonic time of the last refetch for an unknown kid
        self._lock = asyncio.Lock()  # the key set's
        self._discovery_lock = asyncio.Lock()  # apart: a key fetch may need the discovery first
        self.key_fetches = 0
        self._paused_until = float("-inf")

    async def _get_json(self, url: str) -> dict[str, Any]:
        if time.monotonic() < self._paused_until:
            raise IssuerUnavailable()
        try:
            return await self._fetch_json(url)
        except IssuerUnavailable:
            self._paused_until = time.monotonic() + FAILURE_PAUSE_SECONDS
            raise

    async def _fetch_json(self, url: str) -> dict[str, Any]:
        try:
            response = await self._client.get(url, headers={"accept": "application/json"})
        except httpx.HTTPError as exc:
            log.warning("identity provider unreachable at %s: %s", url, type(exc).__name__)
            raise IssuerUnavailable() from None
        if response.status_code != 200 or len(response.content) > MAX_DOCUMENT_BYTES:
            log.warning("identity provider answered %s for %s", response.status_code, url)
            raise IssuerUnavailable()
        try:
            document = json.loads(response.content)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            log.warning("identity provider sent no JSON object at %s", url)
            raise IssuerUnavailable()
        return document

    async def metadata(self) -> Metadata:
        if self._metadata is None:
            async with self._discovery_lock:
                if self._metadata is None:
                    self._metadata = await self._discover()
        return self._metadata

    async def _discover(self) -> Metadata:
        url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        document = await self._get_json(url)
        # OIDC Discovery §4.3: the document must name exactly the issuer it was fetched for.
        if document.get("issuer") != self.issuer:
            log.warning("discovery document at %s names another issuer", url)
            raise IssuerUnavailable()
        fields = ("authorization_endpoint", "token_endpoint", "jwks_uri")
        if not all(isinstance(document.get(name), str) for name in fields):
            log.warning("discovery document at %s lacks %s", url, ", ".join(fields))
            raise IssuerUnavailable()
        end_session = document.get("end_session_endpoint")
        return Metadata(
            authorization_endpoint=document["authorization_endpoint"],
            token_endpoint=document["token_endpoint"],
            jwks_uri=document["jwks_uri"],
            end_session_endpoint=end_session if isinstance(end_session, str) else None,
        )

    async def _fetch_keys(self) -> dict[str | None, Key]:
        jwks_uri = (await self.metadata()).jwks_uri
        document = await self._get_json(jwks_uri)
        self.key_fetches += 1
        keys: dict[str | None, Key] = {}
        for entry in document.get("keys") or []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = JWKRegistry.import_key(entry)
            except (JoseError, ValueError, TypeError):
                continue  # a key type or curve we do not use; the others still count
            if isinstance(key, RSAKey | ECKey | OKPKey) and not key.is_private:
                kid = entry.get("kid")
                keys[kid if isinstance(kid, str) else None] = key
        return keys

    async def key(self, kid: str | None) -> Key | None:
        """The issuer's key with this `kid` (None: the only key), refetching the set once a minute at most."""
        if self._keys is None:
            async with self._lock:
                if self._keys is None:
                    self._keys = await self._fetch_keys()
        found = self._pick(kid)
        if found is not None:
            return found
        async with self._lock:
            found = self._pick(kid)  # another call may have refetched meanwhile
            if found is None and time.monotonic() - self._last_refetch >= self._refetch_interval:
                self._last_refetch = time.monotonic()
                self._keys = await self._fetch_keys()
                found = self._pick(kid)
        return found

    def _pick(self, kid: str | None) -> Key | None:
        keys = self._keys or {}
        if kid is not None:
            return keys.get(kid)
        return next(iter(keys.values())) if len(keys) == 1 else None
