"""Where a provider call goes: the origin its pooled connection is for, and its request head.

Parsed once per base_url and path; a call then only appends its key, length and body to bytes.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import quote, urlsplit

from switchboard import API_VERSION
from switchboard.kit.secret import Secret

_HOST = re.compile(r"[A-Za-z0-9.\-_]+|\[[0-9A-Fa-f:.]+\]")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_FIXED_HEADERS = (
    f"user-agent: switchboard/{API_VERSION}\r\n"
    "content-type: application/json\r\n"
    "accept: */*\r\n"
    # The gateway relays the body under its own headers, so it asks for plain bytes; a provider that
    # compresses anyway is decoded (http1.py), never forwarded still encoded.
    "accept-encoding: identity\r\n"
)
_UNSENDABLE = ("\r", "\n", "\0")
_PATH_SAFE = "/:@!$&'()*+,;=-._~%?"  # what may stay as written in a request target (and `%` escapes)


class Origin(NamedTuple):
    """What a pooled connection can be reused for."""

    tls: bool
    host: str  # a name or an IP literal without brackets; TLS checks the certificate against it
    port: int


class Endpoint(NamedTuple):
    origin: Origin
    head: bytes  # request line and fixed headers, up to the per-call ones
    auth: str = "authorization: Bearer "  # the key's header, up to the key

    def request(self, secret: Secret, body: bytes, headers: bytes = b"") -> bytes:
        """The whole request in one piece (one write, one segment for a small body).

        `headers`: per-call header lines, each ending in CRLF.
        """
        key = secret.reveal()
        if any(c in key for c in _UNSENDABLE):
            # A stored key with a line break would split the header; the key itself is never shown.
            raise ValueError("the credential cannot be sent in an HTTP header")
        auth = (self.auth + key).encode()
        return b"%s%s\r\n%scontent-length: %d\r\n\r\n%s" % (self.head, auth, headers, len(body), body)


def parse(
    base_url: str, path: str, auth_header: str = "authorization", fixed_headers: bytes = b""
) -> Endpoint:
    """`{base_url}{path}` as an endpoint; ValueError for a URL the gateway cannot call.

    The key goes in `auth_header` (as a Bearer token in `authorization`, bare in any other);
    `fixed_headers` are header lines every request to it carries.
    """
    parts = urlsplit(base_url.rstrip("/") + path)
    port = parts.port
    scheme = parts.scheme.lower()
    netloc = parts.netloc
    host_text = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
    host_text = host_text.encode("idna").decode("ascii").lower()  # an internationalised name
    if scheme not in _DEFAULT_PORTS or "@" in netloc or not _HOST.fullmatch(host_text):
        raise ValueError("not an http(s) URL with a plain host")
    host = host_text.strip("[]")
    default = _DEFAULT_PORTS[scheme]
    port = port or default
    host_header = host_text + (f":{port}" if port != default else "")
    target = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_PATH_SAFE)
    head = f"POST {target} HTTP/1.1\r\nhost: {host_header}\r\n{_FIXED_HEADERS}".encode() + fixed_headers
    auth = "authorization: Bearer " if auth_header == "authorization" else f"{auth_header}: "
    return Endpoint(Origin(scheme == "https", host, port), head, auth)
