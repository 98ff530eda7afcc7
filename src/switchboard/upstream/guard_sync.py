"""The guard for litellm's module-level synchronous client (its side calls: ollama's `/api/show`,
lemonade's model lookup, image downloads), so that no socket litellm opens escapes SPEC §21.

litellm makes these calls with its own `litellm.module_level_client`, outside the client a call is
given; TranslatedRelay replaces that handler (litellm's public HTTPHandler, built with our client).
The address policy is the current call's (ASYNC_POLICY below), strict when no call set one.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterable
from contextvars import ContextVar

import httpcore
import httpx

from switchboard.upstream.egress import Egress, RequestDropped, forbidden_among
from switchboard.upstream.guard import ForbiddenAddress, SocketOption
from switchboard.upstream.proxy import ProxyAddress

# True while a call whose target may reach private addresses runs (SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS).
ALLOW_PRIVATE: ContextVar[bool] = ContextVar("switchboard_side_calls_allow_private", default=False)


def _addresses(host: str, port: int, timeout: float) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise httpcore.ConnectError("the provider host does not resolve") from None
    if not infos:
        raise httpcore.ConnectError("the provider host does not resolve")
    return sorted({str(info[4][0]) for info in infos})


class SyncGuardedBackend(httpcore.NetworkBackend):
    def __init__(self, *, strict: bool, connect_timeout: float) -> None:
        self._inner = httpcore.SyncBackend()
        self._strict = strict
        self._connect_timeout = connect_timeout

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = self._connect_timeout if timeout is None else min(timeout, self._connect_timeout)
        if not self._strict:
            return self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        addresses = _addresses(host, port, timeout)
        reason = forbidden_among(addresses)
        if reason is not None:
            raise ForbiddenAddress(reason)
        last: Exception | None = None
        for address in addresses:  # dial what was checked, never the name again
            try:
                return self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not provider endpoints")


class _Pooled(httpx.HTTPTransport):
    def __init__(self, *, strict: bool, timeout: float, context: ssl.SSLContext, proxy: ProxyAddress | None):
        super().__init__(verify=context, trust_env=False)
        backend = SyncGuardedBackend(strict=strict and proxy is None, connect_timeout=timeout)
        if proxy is None:
            self._pool = httpcore.ConnectionPool(ssl_context=context, network_backend=backend, http2=False)
        else:
            self._pool = httpcore.HTTPProxy(  # type: ignore[assignment]
                proxy_url=proxy.url,
                proxy_auth=proxy.auth,
                ssl_context=context,
                network_backend=backend,
                http2=False,
            )


class SyncEgressTransport(httpx.BaseTransport):
    """EgressTransport's synchronous twin: the same rule, proxy and roots."""

    def __init__(self, *, connect_timeout: float, egress: Egress) -> None:
        self._egress = egress
        self._timeout = connect_timeout
        self._context = egress.ssl_context()
        self._pools: dict[tuple[bool, ProxyAddress | None], _Pooled] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        strict = not ALLOW_PRIVATE.get()
        proxy = self._egress.proxy_for(url.scheme == "https", url.host)
        if proxy is not None and strict:
            reason = forbidden_among(
                _addresses(url.host, url.port or (443 if url.scheme == "https" else 80), self._timeout)
            )
            if reason is not None:
                raise ForbiddenAddress(reason)
        key = (strict, proxy)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pooled(
                strict=strict, timeout=self._timeout, context=self._context, proxy=proxy
            )
        try:
            return pool.handle_request(request)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            raise RequestDropped("the provider connection broke after the request was sent") from exc

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
