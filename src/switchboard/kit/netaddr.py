"""Classifies IP addresses a provider call must never reach (SSRF), whatever their spelling."""

from __future__ import annotations

import ipaddress
import socket

# Cloud metadata endpoints that are not covered by the link-local rule.
_METADATA = {
    ipaddress.ip_address("100.100.100.200"),  # Alibaba
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


def forbidden_reason(address: str) -> str | None:
    """Why an address is off limits, or None when it is a public unicast address."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None:
            return forbidden_reason(str(mapped))
        if ip.teredo is not None:
            return "teredo address"
    if ip in _METADATA:
        return "cloud metadata address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address (includes cloud metadata)"
    if ip.is_unspecified:
        return "unspecified address"
    if ip.is_private or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT):
        return "private address"
    if ip.is_multicast or ip.is_reserved:
        return "reserved or multicast address"
    return None


async def resolve_host(host: str, port: int) -> list[str]:
    """All addresses a host name (or odd IP spelling such as 2130706433 or 0x7f.1) resolves to."""
    import asyncio

    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})
