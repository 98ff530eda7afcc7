"""The egress proxy every provider connection goes through when one is set (SPEC §21).

`SWITCHBOARD_EGRESS_PROXY=http://host:port` sends all provider traffic through that proxy (CONNECT
for https); `env` takes HTTPS_PROXY / HTTP_PROXY / NO_PROXY as curl does. The gateway still resolves
and checks a provider's name itself before asking the proxy to connect (the proxy would reach
inside addresses the gateway refuses), and TLS to the provider is end to end through the tunnel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit


class ProxyAddress(NamedTuple):
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


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
    """`http://host:port` (a port is required; no credentials, path or query); ValueError otherwise."""
    parts = urlsplit(text.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme.lower() != "http" or not parts.hostname or port is None:
        raise ValueError("an egress proxy is http://host:port")
    if parts.username or parts.password or parts.path not in ("", "/") or parts.query:
        raise ValueError("an egress proxy is http://host:port, without credentials or a path")
    return ProxyAddress(parts.hostname, port)


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
