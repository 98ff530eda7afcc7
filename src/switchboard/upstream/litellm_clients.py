"""litellm's own module-level HTTP clients, replaced by ones on the egress guard (SPEC §21).

Besides the client each call is handed, litellm 1.106.0 opens connections through module-level
handlers: `module_level_client` (synchronous: ollama's `/api/show`, lemonade's model lookup, image
downloads for providers that want base64) and `module_level_aclient`, plus the `client_session` /
`aclient_session` some providers read. These are litellm's documented settings for supplying
clients; each is set here, once per process, to one of litellm's own handler classes built on
transports that send through the pool of the call running now (CALL_POOL: its guard, proxy and
roots), so every socket litellm opens is checked, proxied and never redirected, whichever
UpstreamClient of the process made the call. Outside any call, the last pool installed is used.
"""

from __future__ import annotations

import weakref
from contextvars import ContextVar
from typing import Any

import httpx

from switchboard.upstream.guard_sync import ALLOW_PRIVATE, SyncEgressTransport
from switchboard.upstream.pool import ClientPool

# Set by TranslatedRelay around each litellm call, next to ALLOW_PRIVATE.
CALL_POOL: ContextVar[ClientPool | None] = ContextVar("switchboard_litellm_call_pool", default=None)


class _Installed:
    """What this process gave litellm (litellm's settings are process-wide)."""

    def __init__(self) -> None:
        self.fallback: ClientPool | None = None
        self.sync: weakref.WeakKeyDictionary[ClientPool, SyncEgressTransport] = weakref.WeakKeyDictionary()


_INSTALLED = _Installed()


def _pool() -> ClientPool:
    pool = CALL_POOL.get() or _INSTALLED.fallback
    assert pool is not None  # installed before litellm is called
    return pool


class _CallPolicyTransport(httpx.AsyncBaseTransport):
    """The guarded pool of the running call (its address policy: strict outside any call)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await _pool().transport(ALLOW_PRIVATE.get()).handle_async_request(request)

    async def aclose(self) -> None:
        return None  # the pools belong to their UpstreamClients


class _CallPoolSyncTransport(httpx.BaseTransport):
    """The synchronous twin: the running call's egress settings on a guarded blocking transport."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        pool = _pool()
        transport = _INSTALLED.sync.get(pool)
        if transport is None:
            transport = SyncEgressTransport(connect_timeout=pool.timeouts.connect, egress=pool.egress)
            _INSTALLED.sync[pool] = transport
        return transport.handle_request(request)

    def close(self) -> None:
        return None


def install(litellm: Any, pool: ClientPool) -> None:
    first = _INSTALLED.fallback is None
    _INSTALLED.fallback = pool
    if not first:
        return
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler

    timeouts = pool.timeouts
    timeout = httpx.Timeout(timeouts.first_byte + timeouts.idle, connect=timeouts.connect)
    sync = httpx.Client(
        transport=_CallPoolSyncTransport(), timeout=timeout, follow_redirects=False, trust_env=False
    )
    transport = _CallPolicyTransport()
    litellm.module_level_client = HTTPHandler(client=sync, follow_redirects=False)
    litellm.module_level_aclient = AsyncHTTPHandler(transport=transport, follow_redirects=False)
    litellm.client_session = sync
    litellm.aclient_session = httpx.AsyncClient(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    )
