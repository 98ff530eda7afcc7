"""What every provider connection shares, whichever HTTP stack opens it (SPEC §21): the address
rule, the egress proxy, the trusted roots, and what a failure after the request was written means."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from switchboard.kit.netaddr import forbidden_reason
from switchboard.upstream.proxy import EgressProxy, ProxyAddress


@dataclass(frozen=True)
class Egress:
    """The deployment's egress settings (SWITCHBOARD_EGRESS_PROXY, SWITCHBOARD_CA_BUNDLE)."""

    proxy: EgressProxy | None = None
    ca_bundle: Path | None = None

    def proxy_for(self, tls: bool, host: str) -> ProxyAddress | None:
        return None if self.proxy is None else self.proxy.for_origin(tls, host)

    def ssl_context(self, http1_alpn: bool = False) -> ssl.SSLContext:
        """The system's roots plus the bundle's; verification always on (loading takes ~20 ms: build once)."""
        context = ssl.create_default_context()
        if self.ca_bundle is not None:
            context.load_verify_locations(cafile=str(self.ca_bundle))
        if http1_alpn:
            context.set_alpn_protocols(["http/1.1"])
        return context


def forbidden_among(addresses: list[str]) -> str | None:
    """Why the answer must not be dialled: any forbidden address refuses it all (a mixed answer is
    what DNS rebinding looks like). None when every address is public."""
    for address in addresses:
        reason = forbidden_reason(address)
        if reason is not None:
            return reason
    return None


class RequestDropped(httpx.NetworkError):
    """The connection broke once the request may have reached the provider, before any status.

    Not a RemoteProtocolError nor a ConnectError: litellm's handler sends those again on a new
    connection, and this request must not be sent twice.
    """


class Written:
    """Whether a request of the current call started going out (its head, past any connect and
    proxy tunnel): set by EgressTransport, read by whoever timed the call. A first-byte timeout
    after that may leave the request running at the provider, so it is not sent again (SPEC §21)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = False


# Set by a caller that times its own call (litellm's, Gemini embeddings'); None: nobody asks.
WRITTEN: ContextVar[Written | None] = ContextVar("switchboard_upstream_written", default=None)

Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


def tracing_writes(written: Written, inner: Trace | None) -> Trace:
    """An httpcore `trace` extension that marks `written` when the request's head starts out (a
    proxy's CONNECT is not the request), then calls any trace the request already had."""

    async def trace(name: str, info: dict[str, Any]) -> None:
        if name == "http11.send_request_headers.started":
            request = info.get("request")
            if getattr(request, "method", b"") != b"CONNECT":
                written.value = True
        if inner is not None:
            await inner(name, info)

    return trace
