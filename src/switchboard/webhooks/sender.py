"""One delivery attempt (Standard Webhooks): the signed POST, through the egress guard, judged.

The signature covers "id.timestamp.body" (standardwebhooks' own `sign`); the timestamp is the
attempt's, so that a receiver's replay window (five minutes in the reference verifier) holds for a
retry hours later, while the id and the body stay those of the event. A 2xx within ATTEMPT_SECONDS
is success; redirects are not followed (a 3xx is a failed attempt).
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple
from urllib.parse import urlsplit

import httpcore
import httpx
from standardwebhooks import Webhook

from switchboard import API_VERSION
from switchboard.kit.clock import utcnow
from switchboard.kit.secret import Secret
from switchboard.upstream.guard import forbidden_cause
from switchboard.upstream.pool import ClientPool

ATTEMPT_SECONDS = 10.0  # SPEC §22: a 2xx within 10 s is success


class Attempt(NamedTuple):
    ok: bool
    status: int | None  # the receiver's HTTP status, if it answered
    error: str | None  # why it failed: timeout, connect_failed, forbidden_address, network_error, non_2xx


class Sender:
    def __init__(self, pool: ClientPool, allow_private: bool, timeout: float = ATTEMPT_SECONDS) -> None:
        # The client (and its TLS context, ~20 ms to load) is built at the first delivery, not at start.
        self._pool = pool
        self._allow_private = allow_private
        self._timeout = timeout

    async def send(self, url: str, message_id: str, body: str, secret: Secret) -> Attempt:
        if not self._allow_private and urlsplit(url).scheme.lower() != "https":
            # Stored while private upstreams were allowed, sent now that they are not.
            return Attempt(False, None, "forbidden_address")
        now = utcnow().replace(microsecond=0)
        headers = {
            "content-type": "application/json",
            "user-agent": f"switchboard/{API_VERSION}",
            "webhook-id": message_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": Webhook(secret.reveal()).sign(message_id, now, body),
        }
        client = self._pool.client(self._allow_private)
        request = client.build_request("POST", url, content=body.encode(), headers=headers)
        try:
            async with asyncio.timeout(self._timeout):
                response = await client.send(request, stream=True)
                await response.aclose()  # the receiver's body is not read: it could be endless
        except TimeoutError:
            return Attempt(False, None, "timeout")
        except httpx.TimeoutException:
            return Attempt(False, None, "timeout")
        except (httpx.HTTPError, httpcore.ConnectError) as exc:
            if forbidden_cause(exc) is not None:
                return Attempt(False, None, "forbidden_address")
            if isinstance(exc, httpx.ConnectError):
                return Attempt(False, None, "connect_failed")
            return Attempt(False, None, "network_error")
        if 200 <= response.status_code < 300:
            return Attempt(True, response.status_code, None)
        return Attempt(False, response.status_code, "non_2xx")
