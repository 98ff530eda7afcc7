"""The egress proxy every provider connection goes through when one is set (SPEC §21).

`SWITCHBOARD_EGRESS_PROXY=http://host:port` sends all provider traffic through that proxy (CONNECT
for https); `env` takes HTTPS_PROXY / HTTP_PROXY / NO_PROXY as curl does. The gateway still resolves
and checks a provider's name itself before asking the proxy to connect (the proxy would reach
inside addresses the gateway refuses), and TLS to the provider is end to end through the tunnel.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class ProxyAddress:
    """Where the proxy listens, and the basic-auth credentials it asks for (never in a repr)."""

    host: str
    port: int
    username: str = field(default="", repr=False)
    password: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        """The proxy's URL without its credentials (safe to log; httpcore takes them apart)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def auth(self) -> tuple[str, str] | None:
        return (self.username, self.password) if self.username or self.password else None

    @property
    def authorization(self) -> bytes:
        """The `proxy-authorization` header line the gateway's own client sends, or b""."""
        if self.auth is None:
            return b""
        token = base64.b64encode(f"{self.username}:{self.password}".encode())
        return b"proxy-authorization: Basic " + token + b"\r\n"


@dataclass(frozen=True)
class EgressProxy:
    """Which proxy a provider origin goes through (None: direct)."""

    http: ProxyAddress | None = None
    https: ProxyAddress | None = None
    no_proxy: tuple[str, ...] = ()

    def for_origin(self, tls: bool, host: str) -> ProxyAddress | None:
        proxy = self.https if tls else self.http
        if proxy is None or self._bypassed(host):
            return None
        return proxy

    def _bypassed(self, host: str) -> bool:
        name = host.strip("[]").rstrip(".").lower()
        return any(entry == "*" or name == entry or name.endswith("." + entry) for entry in self.no_proxy)


def parse_proxy_url(text: str) -> ProxyAddress:
    """`http://host:port` or `http://user:password@host:port` (basic auth; percent-encode `@`, `:`
    and `%` in them), a port required, no path or query; ValueError otherwise. The messages never
    quote the text: it may hold the proxy's password."""
    parts = urlsplit(text.strip())
    if parts.scheme.lower() == "https":
        raise ValueError(
            "an https:// egress proxy (TLS between the gateway and the proxy) is not supported; "
            "use http://host:port (https providers are still reached by an end-to-end TLS tunnel)"
        )
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme.lower() != "http" or not parts.hostname or port is None:
        raise ValueError("an egress proxy is http://host:port or http://user:password@host:port")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("an egress proxy is http://host:port, without a path or query")
    username, password = unquote(parts.username or ""), unquote(parts.password or "")
    if any(not ch.isprintable() for ch in username + password) or ":" in username:
        raise ValueError("the egress proxy's user name or password holds a character a header cannot carry")
    return ProxyAddress(parts.hostname, port, username, password)


def from_setting(value: str, env: Mapping[str, str]) -> EgressProxy | None:
    """SWITCHBOARD_EGRESS_PROXY's value ("" none, `env`, or a URL) as the proxy choice; ValueError."""
    value = value.strip()
    if not value:
        return None
    if value != "env":
        proxy = parse_proxy_url(value)
        return EgressProxy(http=proxy, https=proxy)

    def variable(name: str) -> str:
        return (env.get(name) or env.get(name.lower()) or "").strip()

    https, http = variable("HTTPS_PROXY"), variable("HTTP_PROXY")
    no_proxy = tuple(
        entry.strip().lstrip(".").lower().split(":", 1)[0]
        for entry in variable("NO_PROXY").split(",")
        if entry.strip()
    )
    return EgressProxy(
        http=parse_proxy_url(http) if http else None,
        https=parse_proxy_url(https) if https else None,
        no_proxy=no_proxy,
    )
