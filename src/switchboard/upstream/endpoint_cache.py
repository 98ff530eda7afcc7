"""The relays' one cache of parsed endpoints: a call only appends its key and body to the head.

Each relay (OpenAI's, the adapted providers', the native formats') keeps one; an endpoint is parsed
once per base_url, path and auth header. Credentials' base_urls are few, so the cache is small; past
`SIZE` entries (a churn of credentials) it starts over rather than growing.
"""

from __future__ import annotations

from switchboard.upstream import endpoints, provider_errors
from switchboard.upstream.endpoints import Endpoint

SIZE = 1024


class EndpointCache:
    __slots__ = ("_fixed_headers", "_known")

    def __init__(self, fixed_headers: bytes = b"") -> None:
        self._fixed_headers = fixed_headers  # header lines every request of this relay carries
        self._known: dict[tuple[str, str, str], Endpoint] = {}

    def get(
        self, base_url: str | None, default_base_url: str, path: str, auth_header: str = "authorization"
    ) -> Endpoint:
        """The credential's `base_url` (the provider's default when it has none) with `path`;
        422 for a base_url the gateway cannot call."""
        key = (base_url or default_base_url, path, auth_header)
        endpoint = self._known.get(key)
        if endpoint is None:
            try:
                endpoint = endpoints.parse(key[0], path, auth_header, self._fixed_headers)
            except ValueError:
                raise provider_errors.unusable_base_url() from None
            if len(self._known) >= SIZE:
                self._known.clear()
            self._known[key] = endpoint
        return endpoint
