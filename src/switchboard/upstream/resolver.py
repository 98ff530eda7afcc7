"""Connect-time SSRF guard of the OpenAI-format pool: resolve, refuse any forbidden answer, dial only those.

Every host goes through the lookup, IP literals in any spelling included (`2130706433`, `127.1`,
`[::ffff:127.0.0.1]` all come back as the address they mean), and the pool dials exactly the
addresses checked here, so DNS rebinding between check and connect has nothing to exploit. TLS SNI
and the Host header keep the name.
"""

from __future__ import annotations

import asyncio
import socket

from aiohappyeyeballs import AddrInfoType

from switchboard.upstream.egress import forbidden_among


class ForbiddenHost(OSError):
    """The provider host is, or resolves to, an address a call must not reach."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the provider host resolves to a forbidden address ({reason})")
        self.reason = reason


async def lookup(host: str, port: int) -> list[AddrInfoType]:
    """The operating system's answer for a host (tests replace this to play a DNS server)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [(family, kind, proto, canonical, address) for family, kind, proto, canonical, address in infos]


async def addresses(host: str, port: int, *, strict: bool) -> list[AddrInfoType]:
    """What to dial for a host; when `strict`, refuses the whole answer if any address is forbidden
    (a mixed answer is what DNS rebinding looks like)."""
    infos = await lookup(host, port)
    if not infos:
        raise OSError(f"{host} does not resolve")
    if strict:
        reason = forbidden_among([str(info[4][0]) for info in infos])
        if reason is not None:
            raise ForbiddenHost(reason)
    return infos
