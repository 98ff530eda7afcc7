"""litellm's own module-level HTTP clients, replaced by ones on the egress guard (SPEC §21).

Besides the client each call is handed, litellm 1.106.0 opens connections through module-level
handlers: `module_level_client` (synchronous: ollama's `/api/show`, lemonade's model lookup, image
downloads for providers that want base64) and `module_level_aclient`, plus the `client_session` /
`aclient_session` some providers read. These are litellm's documented settings for supplying
clients; each is set here to one of litellm's own handler classes built on our transports, so
every socket litellm opens is checked, proxied and never redirected. Process-wide, like litellm.
"""

from __future__ import annotations

from typing import Any

import httpx

from switchboard.upstream.guard_sync import ALLOW_PRIVATE, SyncEgressTransport
from switchboard.upstream.pool import ClientPool


class _CallPolicyTransport(httpx.AsyncBaseTransport):
    """The guarded pool of the running call's address policy (strict outside any call)."""

    def __init__(self, pool: ClientPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._pool.transport(ALLOW_PRIVATE.get()).handle_async_request(request)

    async def aclose(self) -> None:
        return None  # the pool belongs to the UpstreamClient


def install(litellm: Any, pool: ClientPool) -> None:
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler

    timeouts = pool.timeouts
    timeout = httpx.Timeout(timeouts.first_byte + timeouts.idle, connect=timeouts.connect)
    sync = httpx.Client(
        transport=SyncEgressTransport(connect_timeout=timeouts.connect, egress=pool.egress),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
    )
    transport = _CallPolicyTransport(pool)
    litellm.module_level_client = HTTPHandler(client=sync, follow_redirects=False)
    litellm.module_level_aclient = AsyncHTTPHandler(transport=transport, follow_redirects=False)
    litellm.client_session = sync
    litellm.aclient_session = httpx.AsyncClient(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    )
