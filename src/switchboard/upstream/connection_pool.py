"""Keep-alive HTTP/1.1 connections to providers, pooled per origin, opened through the SSRF guard.

One pool per address policy (`ProviderConnections`): a connection opened without the guard is never
reused by a call that needs it. A deployment has one policy (SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS), so
in practice one pool. The egress proxy, when set (upstream/proxy.py), is reached by CONNECT for https
and asked in absolute form for http, after the target's own addresses were checked. No cookie is
kept and no redirect followed: the relay sends exactly one request per call.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections import deque

from aiohappyeyeballs import start_connection

from switchboard.upstream import resolver
from switchboard.upstream.egress import Egress
from switchboard.upstream.endpoints import Origin
from switchboard.upstream.http1 import MAX_HEAD, Http1Connection
from switchboard.upstream.proxy import ProxyAddress
from switchboard.upstream.types import Timeouts

# Many concurrent streams each hold a connection for their whole length, so the pool is wide.
MAX_CONNECTIONS = 2000
# Below the idle limits providers' front ends use, so a pooled connection is rarely closed under us
# (a POST is never retried on a connection the server dropped while it was idle: it may have run).
KEEPALIVE_SECONDS = 30.0
# A connect that failed (refused, reset, TLS) wrote nothing, so it is tried once more on a fresh
# connection inside the same connect-timeout budget (SPEC §21): a blip costs no attempt, and a dead
# host costs at most one connect timeout before §14 moves on.
CONNECT_TRIES = 2
HAPPY_EYEBALLS_DELAY = 0.25  # RFC 8305's connection attempt delay, as aiohttp and asyncio use


class ConnectFailed(OSError):
    """No connection to the provider could be opened (name, route, refusal, TLS)."""


class ConnectionPool:
    def __init__(
        self,
        *,
        strict: bool,
        connect_timeout: float,
        ssl_context: ssl.SSLContext | None = None,
        max_inflated: int = 8 * 1024 * 1024,
        egress: Egress | None = None,
    ) -> None:
        self.strict = strict
        self._egress = egress or Egress()
        self._max_inflated = max_inflated
        self._connect_timeout = connect_timeout
        self._idle: dict[Origin, list[Http1Connection]] = {}
        self._busy: set[Http1Connection] = set()
        self._slot_waiters: deque[asyncio.Future[None]] = deque()
        self._ssl = ssl_context  # None: the system's trusted authorities
        self._sweep: asyncio.TimerHandle | None = None
        self.closed = False

    def reuse(self, origin: Origin) -> Http1Connection | None:
        """A pooled connection to `origin` still open, if any (the most recently used: warmest)."""
        stack = self._idle.get(origin)
        while stack:
            conn = stack.pop()
            if conn.open and not conn.peer_closed():
                self._busy.add(conn)
                return conn
            conn.close()
        return None

    async def connect(
        self, origin: Origin, deadline: float, connect_timeout: float | None = None
    ) -> Http1Connection:
        """A new connection, within the connect timeout (the pool's, or a tighter `connect_timeout`)
        and `deadline`, whichever comes first; a failed connect is tried again within that budget."""
        loop = asyncio.get_running_loop()
        limit = (
            self._connect_timeout if connect_timeout is None else min(connect_timeout, self._connect_timeout)
        )
        async with asyncio.timeout_at(min(deadline, loop.time() + limit)):
            if len(self._busy) >= MAX_CONNECTIONS:
                await self._slot()
                reused = self.reuse(origin)  # one may have come back while this call waited
                if reused is not None:
                    return reused
            for tries_left in range(CONNECT_TRIES - 1, -1, -1):
                conn = Http1Connection(loop, origin, self._max_inflated)
                self._busy.add(conn)
                try:
                    await self._open(loop, origin, conn)
                except ConnectFailed:
                    self.release(conn)
                    if not tries_left:
                        raise
                    continue  # nothing was written: a fresh connection, not an attempt (SPEC §21)
                except BaseException:
                    self.release(conn)
                    raise
                return conn
        raise AssertionError("unreachable: the last try returns or raises")

    def release(self, conn: Http1Connection) -> None:
        """Back to the pool when the exchange left nothing on it, otherwise closed."""
        if conn not in self._busy:  # released already (or the pool was closed)
            return
        self._busy.remove(conn)
        if conn.reusable and not self.closed:
            loop = asyncio.get_running_loop()
            conn.idle_since = loop.time()
            self._idle.setdefault(conn.origin, []).append(conn)
            if self._sweep is None:
                self._sweep = loop.call_later(KEEPALIVE_SECONDS, self._close_stale)
        else:
            conn.close()
        if self._slot_waiters:
            self._wake_one()

    async def _slot(self) -> None:
        """Waits while MAX_CONNECTIONS are in use (the caller's connect timeout bounds the wait)."""
        while len(self._busy) >= MAX_CONNECTIONS:
            waiter = asyncio.get_running_loop().create_future()
            self._slot_waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: the freed slot goes to the next in line
                else:
                    self._slot_waiters.remove(waiter)
                raise

    def _wake_one(self) -> None:
        while self._slot_waiters:
            waiter = self._slot_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _open(self, loop: asyncio.AbstractEventLoop, origin: Origin, conn: Http1Connection) -> None:
        proxy = self._egress.proxy_for(origin.tls, origin.host)
        try:
            if proxy is None or self.strict:  # the target is checked even when a proxy dials it
                infos = await resolver.addresses(origin.host, origin.port, strict=self.strict)
            if proxy is not None:  # the operator's proxy may well be on a private address
                infos = await resolver.addresses(proxy.host, proxy.port, strict=False)
            sock = await start_connection(infos, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY)
        except resolver.ForbiddenHost:
            raise
        except (OSError, RuntimeError) as exc:  # uvloop reports some failures as RuntimeError
            raise ConnectFailed("could not connect to the provider") from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a request is one write
            if proxy is not None and origin.tls:
                await _tunnel(loop, sock, proxy, origin)
            elif proxy is not None:
                conn.absolute_target = _authority(origin, "http://")
                conn.proxy_authorization = proxy.authorization
            await loop.create_connection(
                lambda: conn,
                sock=sock,
                ssl=self.ssl_context() if origin.tls else None,
                server_hostname=origin.host if origin.tls else None,
            )
        except OSError as exc:
            sock.close()
            raise ConnectFailed("could not connect to the provider") from exc
        except BaseException:
            sock.close()
            raise

    def ssl_context(self) -> ssl.SSLContext:
        """Built once: loading the CA certificates blocks the loop for some 20 ms."""
        if self._ssl is None:
            self._ssl = self._egress.ssl_context(http1_alpn=True)
        return self._ssl

    def _close_stale(self) -> None:
        """Closes connections idle longer than the keep-alive; runs while any connection is idle."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        oldest = loop.time() - KEEPALIVE_SECONDS
        for origin, stack in list(self._idle.items()):
            for conn in stack:
                if not conn.open or conn.idle_since <= oldest:
                    conn.close()
            stack[:] = [conn for conn in stack if not conn.closed]
            if not stack:
                del self._idle[origin]
        if self._idle:
            self._sweep = loop.call_later(KEEPALIVE_SECONDS / 2, self._close_stale)

    def idle_connections(self) -> list[Http1Connection]:
        return [conn for stack in self._idle.values() for conn in stack if conn.open]

    @property
    def busy(self) -> int:
        return len(self._busy)

    def close(self) -> None:
        self.closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for conn in [*self.idle_connections(), *self._busy]:
            conn.close()
        self._idle.clear()
        self._busy.clear()


def _authority(origin: Origin, prefix: str = "") -> bytes:
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    return f"{prefix}{host}:{origin.port}".encode("ascii")


async def _tunnel(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, proxy: ProxyAddress, origin: Origin
) -> None:
    """Asks the proxy for a tunnel to `origin` (CONNECT); TLS then runs end to end through it."""
    authority = _authority(origin)
    head = b"CONNECT %s HTTP/1.1\r\nhost: %s\r\n%s\r\n" % (authority, authority, proxy.authorization)
    await loop.sock_sendall(sock, head)
    head = b""
    while b"\r\n\r\n" not in head:
        data = await loop.sock_recv(sock, 4096)
        if not data or len(head) > MAX_HEAD:
            raise OSError("the egress proxy closed the tunnel request")
        head += data
    status = head.split(b"\r\n", 1)[0].split(b" ", 2)
    if len(status) < 2 or not status[0].startswith(b"HTTP/1.") or status[1] != b"200":
        raise OSError(f"the egress proxy refused the tunnel ({status[1:2]!r})")
    if not head.endswith(b"\r\n\r\n"):
        raise OSError("the egress proxy sent bytes after its answer to CONNECT")


class ProviderConnections:
    """Builds at most two pools: the strict one (SSRF guard on) and, if a target asks, the lenient one."""

    def __init__(
        self, timeouts: Timeouts, ssl_context: ssl.SSLContext | None = None, egress: Egress | None = None
    ) -> None:
        self.timeouts = timeouts
        self._ssl_context = ssl_context
        self._egress = egress
        self._pools: dict[bool, ConnectionPool] = {}

    def pool(self, allow_private: bool) -> ConnectionPool:
        pool = self._pools.get(allow_private)
        if pool is None:
            pool = self._pools[allow_private] = ConnectionPool(
                strict=not allow_private,
                connect_timeout=self.timeouts.connect,
                ssl_context=self._ssl_context,
                max_inflated=self.timeouts.max_body_bytes,
                egress=self._egress,
            )
        return pool

    async def aclose(self) -> None:
        pools = list(self._pools.values())
        self._pools.clear()
        for pool in pools:
            pool.close()
