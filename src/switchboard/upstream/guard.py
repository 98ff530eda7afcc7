"""Connect-time SSRF guard: resolve, check every address, then connect to a checked one.

Checking a name and letting the socket layer resolve it again would let DNS rebinding through
(public answer at check time, 127.0.0.1 at connect time), so the guard is the network backend
itself: httpcore hands it the host name and it dials the address it checked. TLS SNI and the
Host header still carry the original name, because httpcore takes them from the URL.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable

import httpcore
import httpx

from switchboard.kit.netaddr import resolve_host
from switchboard.upstream.egress import WRITTEN, Egress, RequestDropped, forbidden_among, tracing_writes
from switchboard.upstream.proxy import ProxyAddress

# httpcore's own socket option type (it keeps it in a private module).
SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


class ForbiddenAddress(httpcore.ConnectError):
    """The provider host resolves to an address a call must not reach; the reason names its class."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the provider host resolves to a forbidden address ({reason})")
        self.reason = reason


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Caps every connect at `connect_timeout` (litellm passes one timeout for everything) and,
    when `strict`, refuses forbidden addresses."""

    def __init__(self, *, strict: bool, connect_timeout: float) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._strict = strict
        self._connect_timeout = connect_timeout

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        timeout = self._connect_timeout if timeout is None else min(timeout, self._connect_timeout)
        if not self._strict:
            return await self._inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                addresses = await resolve_host(host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout("resolving the provider host timed out") from None
        except OSError:
            raise httpcore.ConnectError("the provider host does not resolve") from None
        if not addresses:
            raise httpcore.ConnectError("the provider host does not resolve")
        reason = forbidden_among(addresses)
        if reason is not None:
            raise ForbiddenAddress(reason)
        last: Exception | None = None
        for address in addresses:
            remaining = max(deadline - loop.time(), 0.001)
            try:
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=remaining,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not provider endpoints")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class PooledTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a keep-alive HTTP/1.1 pool whose connections go through the guard,
    or, with `proxy`, through the egress proxy (the target is checked by EgressTransport first).

    httpx takes no network backend argument, so the pool is built here with one.
    """

    def __init__(
        self,
        *,
        allow_private: bool,
        limits: httpx.Limits,
        connect_timeout: float,
        ssl_context: ssl.SSLContext,
        proxy: ProxyAddress | None = None,
    ) -> None:
        super().__init__(verify=ssl_context, limits=limits, trust_env=False)
        options = {
            "ssl_context": ssl_context,
            "max_connections": limits.max_connections,
            "max_keepalive_connections": limits.max_keepalive_connections,
            "keepalive_expiry": limits.keepalive_expiry,
            "http1": True,
            "http2": False,
        }
        if proxy is None:
            backend = GuardedBackend(strict=not allow_private, connect_timeout=connect_timeout)
            self._pool = httpcore.AsyncConnectionPool(network_backend=backend, **options)  # type: ignore[arg-type]
        else:
            # The proxy is the operator's own (often on loopback): only the target is checked.
            backend = GuardedBackend(strict=False, connect_timeout=connect_timeout)
            self._pool = httpcore.AsyncHTTPProxy(  # type: ignore[assignment]
                proxy_url=proxy.url,
                proxy_auth=proxy.auth,
                network_backend=backend,
                **options,  # type: ignore[arg-type]
            )


class EgressTransport(httpx.AsyncBaseTransport):
    """Every httpx request to a provider (litellm's, Gemini embeddings'): direct through the guard,
    or through the egress proxy after the gateway resolved and checked the target itself; and a
    break after the request went out raised as RequestDropped, which nothing sends again."""

    def __init__(
        self, *, allow_private: bool, limits: httpx.Limits, connect_timeout: float, egress: Egress
    ) -> None:
        self._strict = not allow_private
        self._egress = egress
        self._connect_timeout = connect_timeout
        self._ssl = egress.ssl_context()
        self._limits = limits
        self._direct = self._pool(None)
        self._proxied: dict[ProxyAddress, PooledTransport] = {}

    def _pool(self, proxy: ProxyAddress | None) -> PooledTransport:
        return PooledTransport(
            allow_private=not self._strict,
            limits=self._limits,
            connect_timeout=self._connect_timeout,
            ssl_context=self._ssl,
            proxy=proxy,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        proxy = self._egress.proxy_for(url.scheme == "https", url.host)
        transport = self._direct
        if proxy is not None:
            if self._strict:
                await self._check(url.host, url.port or (443 if url.scheme == "https" else 80))
            transport = self._proxied.get(proxy) or self._proxied.setdefault(proxy, self._pool(proxy))
        written = WRITTEN.get()
        if written is not None:
            request.extensions = {
                **request.extensions,
                "trace": tracing_writes(written, request.extensions.get("trace")),
            }
        try:
            return await transport.handle_async_request(request)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            # Past the connect: some of the request may have reached the provider (SPEC §21).
            raise RequestDropped("the provider connection broke after the request was sent") from exc

    async def _check(self, host: str, port: int) -> None:
        """The target's own addresses, before the proxy is asked to reach it."""
        try:
            async with asyncio.timeout(self._connect_timeout):
                addresses = await resolve_host(host, port)
        except (OSError, TimeoutError):
            raise httpx.ConnectError("the provider host does not resolve") from None
        if not addresses:
            raise httpx.ConnectError("the provider host does not resolve")
        reason = forbidden_among(addresses)
        if reason is not None:
            raise ForbiddenAddress(reason)

    async def aclose(self) -> None:
        for transport in [self._direct, *self._proxied.values()]:
            await transport.aclose()


def forbidden_cause(error: BaseException) -> ForbiddenAddress | None:
    """The guard's refusal somewhere in an exception chain (httpx and litellm wrap it)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ForbiddenAddress):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
