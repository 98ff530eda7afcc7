"""The pooled aiohttp sessions OpenAI-format calls go through (one per address policy).

aiohttp rather than httpx for this path by measurement (`bench/run --clients`): about 0.08 ms of
CPU per request against httpx's 0.5 to 1.2 ms. litellm's kinds keep the httpx pool (`pool.py`).
"""

from __future__ import annotations

import aiohttp

from switchboard import API_VERSION
from switchboard.upstream.resolver import GuardedResolver, guarded_socket
from switchboard.upstream.types import Timeouts

# Many concurrent streams each hold a connection for their whole length, so the pool is wide.
MAX_CONNECTIONS = 2000
# Below the idle limits providers' front ends use, so a pooled connection is rarely closed under us
# (aiohttp does not retry a POST on a connection the server dropped while it was idle).
KEEPALIVE_SECONDS = 30.0
HEADERS = {
    "user-agent": f"switchboard/{API_VERSION}",
    "content-type": "application/json",
    # The gateway relays the body under its own headers, so it asks for plain bytes; a provider that
    # compresses anyway is decompressed (auto_decompress), never forwarded still encoded.
    "accept-encoding": "identity",
}


class SessionPool:
    """Builds at most two sessions: the strict one (SSRF guard on) and, if a target asks, the lenient one.

    Connections are pooled per session, so a connection opened without the guard is never reused by a
    call that needs it. A deployment has one policy (SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS), so in
    practice one session.
    """

    def __init__(self, timeouts: Timeouts) -> None:
        self.timeouts = timeouts
        self._sessions: dict[bool, aiohttp.ClientSession] = {}
        self._resolvers: list[GuardedResolver] = []  # the connector closes only resolvers it built

    def session(self, allow_private: bool) -> aiohttp.ClientSession:
        session = self._sessions.get(allow_private)
        if session is None:
            session = self._sessions[allow_private] = self._build(allow_private)
        return session

    def _build(self, allow_private: bool) -> aiohttp.ClientSession:
        resolver = None if allow_private else GuardedResolver()
        if resolver is not None:
            self._resolvers.append(resolver)
        connector = aiohttp.TCPConnector(
            limit=MAX_CONNECTIONS,
            limit_per_host=0,
            keepalive_timeout=KEEPALIVE_SECONDS,
            resolver=resolver,
            socket_factory=None if allow_private else guarded_socket,
        )
        return aiohttp.ClientSession(
            connector=connector,
            headers=HEADERS,
            # Reads are timed by the relay itself (first byte, then idle between chunks); aiohttp caps
            # the wait for a pooled or new connection, and each connect.
            timeout=aiohttp.ClientTimeout(
                total=None, connect=self.timeouts.connect, sock_connect=self.timeouts.connect
            ),
            cookie_jar=aiohttp.DummyCookieJar(),  # one provider's cookies must not follow another caller
            trust_env=False,  # no proxy or .netrc from the environment
            auto_decompress=True,
        )

    async def aclose(self) -> None:
        sessions = list(self._sessions.values())
        self._sessions.clear()
        resolvers, self._resolvers = self._resolvers, []
        for session in sessions:
            await session.close()
        for resolver in resolvers:
            await resolver.close()
