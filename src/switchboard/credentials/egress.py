"""Creation-time check of a credential's base_url: https, and no host that reaches inside (SSRF)."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from urllib.parse import unquote, urlsplit

from switchboard.errors import Unprocessable
from switchboard.kit.netaddr import forbidden_reason, resolve_host
from switchboard.upstream import private_defaults

# Host names are plain ASCII labels; anything else (spaces, unicode, `%`) is refused before
# resolution, which also keeps inet_aton from accepting "1.2.3.4 anything".
_HOST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9.])?$")
_NUMERIC_HOST = re.compile(r"^[0-9A-Fa-fXx.]+$")
RESOLVE_TIMEOUT_SECONDS = 3.0


# The setting's name in the refusal: a self-hosted model on http://localhost is the common first case.
PRIVATE_HINT = "; for a self-hosted server start the gateway with SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS=true"


def _refuse(reason: str, field: str = "base_url") -> Unprocessable:
    # The URL itself is not echoed: users paste keys into strange places.
    return Unprocessable(f"{field} is refused: {reason}", param=field)


# A space or control character in a URL is never a provider's: CR/LF would split the request head.
_UNSAFE_URL_CHAR = re.compile(r"[\x00-\x20\x7f-\x9f]")


def _parse(url: str, allow_private: bool, field: str) -> tuple[str, int]:
    if _UNSAFE_URL_CHAR.search(url):
        raise _refuse("it must not contain spaces or control characters", field)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise _refuse("not a valid URL", field) from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme.lower() not in schemes:
        raise _refuse("it must use https" + ("" if allow_private else PRIVATE_HINT), field)
    if parts.username is not None or parts.password is not None:
        raise _refuse("it must not carry a user name or password; store the key as the secret", field)
    if parts.query or parts.fragment:
        raise _refuse("it must not have a query or fragment", field)
    # `/../` would be resolved by the HTTP client or a proxy on the way: the URL stored would not
    # be the URL called. Refused (not normalised), so that what is stored is what the caller wrote.
    if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        raise _refuse("its path must not have `.` or `..` segments", field)
    host = parts.hostname
    if not host:
        raise _refuse("it has no host", field)
    default_port = 443 if parts.scheme.lower() == "https" else 80
    return host, port or default_port


def ip_literal(host: str) -> str | None:
    """The address a host spells directly (dotted, decimal, hex, octal, IPv6, IPv4-mapped), or None."""
    try:
        return str(ipaddress.ip_address(host.split("%", 1)[0]))
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            # The classic parser: 2130706433, 0x7f000001, 0177.0.0.1 and 127.1 are all 127.0.0.1.
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _address_refusal(address: str) -> str | None:
    reason = forbidden_reason(address)
    return None if reason is None else f"its host is a {reason}"


async def host_refusal(host: str, port: int) -> str | None:
    """Why a host must not be called, or None. A name that does not resolve now is let through:
    the connect-time check in `upstream` guards the actual call (and any later DNS change)."""
    literal = ip_literal(host)
    if literal is not None:
        return _address_refusal(literal)
    if ":" in host:
        return "its host is not a valid IPv6 address"
    if not _HOST_NAME.match(host):
        return "its host name is not plain ASCII (use the punycode form)"
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return "its host is a loopback name (localhost)"
    try:
        addresses = await asyncio.wait_for(resolve_host(name, port), RESOLVE_TIMEOUT_SECONDS)
    except (OSError, TimeoutError, UnicodeError):
        return None
    for address in addresses:
        reason = _address_refusal(address)
        if reason is not None:
            return reason
    return None


async def check_egress(url: str, allow_private: bool, field: str = "base_url") -> None:
    """Raise Unprocessable (422) unless `url` may be a provider base URL (or, `field` "url", a
    webhook's: the same rules, SPEC §21).

    `allow_private` (SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS) lifts both the https rule and the address
    rule, for self-hosted models and tests; the URL must still be a plain http(s) URL.
    """
    host, port = _parse(url, allow_private, field)
    if allow_private:
        return
    reason = await host_refusal(host, port)
    if reason is not None:
        raise _refuse(reason + PRIVATE_HINT, field)


def check_endpoint_known(provider: str, base_url: str | None, allow_private: bool) -> None:
    """Raise Unprocessable (422) when a credential of `provider` without a base_url would be sent to
    litellm's default endpoint on the gateway's own host (SPEC §21)."""
    problem = private_defaults.refusal(provider, base_url, allow_private)
    if problem is not None:
        raise Unprocessable(f"base_url is refused: {problem}", param="base_url")
