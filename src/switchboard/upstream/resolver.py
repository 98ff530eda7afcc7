"""Connect-time SSRF guard of the aiohttp session: a checking resolver and a checking socket factory.

The resolver resolves a provider's host name, refuses the whole answer if any address is forbidden
(a mixed answer is what DNS rebinding looks like) and hands aiohttp only the addresses it checked,
so aiohttp dials exactly those while TLS SNI and the Host header keep the name. aiohttp never asks
the resolver about IP literals (`https://127.0.0.1`, `[::ffff:127.0.0.1]`), so the socket factory
checks every address actually dialed, literal or resolved, as the last word.
"""

from __future__ import annotations

import socket

from aiohappyeyeballs import AddrInfoType
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from switchboard.kit.netaddr import forbidden_reason


class ForbiddenHost(OSError):
    """The provider host is, or resolves to, an address a call must not reach."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the provider host resolves to a forbidden address ({reason})")
        self.reason = reason


class GuardedResolver(AbstractResolver):
    def __init__(self, inner: AbstractResolver | None = None) -> None:
        self._inner = inner if inner is not None else DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await self._inner.resolve(host, port, family)
        for answer in answers:
            reason = forbidden_reason(answer["host"])
            if reason is not None:
                raise ForbiddenHost(reason)
        return answers

    async def close(self) -> None:
        await self._inner.close()


def guarded_socket(addr_info: AddrInfoType) -> socket.socket:
    """aiohttp's socket factory: refuses to open a socket toward a forbidden address."""
    family, kind, proto, _, address = addr_info
    reason = forbidden_reason(str(address[0]))
    if reason is not None:
        raise ForbiddenHost(reason)
    return socket.socket(family=family, type=kind, proto=proto)
