"""The shared, pooled HTTP clients every provider call goes through (one per address policy)."""

from __future__ import annotations

import httpx

from switchboard import API_VERSION
from switchboard.upstream.egress import Egress
from switchboard.upstream.guard import EgressTransport
from switchboard.upstream.types import Timeouts

# Many concurrent streams each hold a connection for their whole length, so the pool is wide.
DEFAULT_LIMITS = httpx.Limits(max_connections=2000, max_keepalive_connections=200, keepalive_expiry=60.0)


class ClientPool:
    """Builds at most two clients: the strict one (SSRF guard on) and, if a target asks, the lenient one.

    Connections are pooled per client, so a connection opened without the guard is never reused by a
    call that needs it.
    """

    def __init__(
        self, timeouts: Timeouts, egress: Egress | None = None, limits: httpx.Limits = DEFAULT_LIMITS
    ) -> None:
        self.timeouts = timeouts
        self.egress = egress or Egress()
        self._limits = limits
        self._clients: dict[bool, httpx.AsyncClient] = {}
        self._transports: dict[bool, EgressTransport] = {}

    def transport(self, allow_private: bool) -> EgressTransport:
        self.client(allow_private)
        return self._transports[allow_private]

    def client(self, allow_private: bool) -> httpx.AsyncClient:
        client = self._clients.get(allow_private)
        if client is None:
            transport = EgressTransport(
                allow_private=allow_private,
                limits=self._limits,
                connect_timeout=self.timeouts.connect,
                egress=self.egress,
            )
            # Reads are timed by the relays themselves (first byte, then idle between chunks).
            timeout = httpx.Timeout(
                connect=self.timeouts.connect,
                read=None,
                write=self.timeouts.first_byte,
                pool=self.timeouts.connect,
            )
            client = httpx.AsyncClient(
                transport=transport,
                timeout=timeout,
                follow_redirects=False,  # a redirect could point anywhere; providers do not redirect
                trust_env=False,
                headers={"user-agent": f"switchboard/{API_VERSION}"},
            )
            self._transports[allow_private] = transport
            self._clients[allow_private] = client
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        self._transports.clear()
