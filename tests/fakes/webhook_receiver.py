"""A webhook receiver on a real socket: it verifies every delivery's signature with the reference
`standardwebhooks` package and answers as the test scripts it (per path: a list of statuses)."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import orjson
from standardwebhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True)
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool  # the signature checked out under the path's secret
    answered: int

    @property
    def message_id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def event(self) -> dict[str, Any]:
        return dict(orjson.loads(self.body))


class WebhookReceiver:
    """An ASGI app; `secrets[path]` is the secret to verify with, `statuses[path]` what to answer
    (popped per request; 200 once empty)."""

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}
        self.statuses: dict[str, list[int]] = defaultdict(list)
        self.received: list[Delivery] = []
        self._changed = threading.Condition()
        self.base_url = ""

    def of(self, path: str) -> list[Delivery]:
        with self._changed:
            return [d for d in self.received if d.path == path]

    def wait_for(
        self,
        path: str,
        count: int,
        timeout: float = 60.0,
        answered: int | None = None,
        containing: str | None = None,
    ) -> list[Delivery]:
        """At least `count` deliveries to `path` (answered `answered`, whose body holds `containing`,
        if given); fails after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [
                    d
                    for d in self.received
                    if d.path == path
                    and (answered is None or d.answered == answered)
                    and (containing is None or containing in d.body.decode())
                ]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                assert left > 0, f"{len(found)} of {count} deliveries to {path} arrived: {self.received}"
                self._changed.wait(left)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
        verified = False
        secret = self.secrets.get(path)
        if secret is not None:
            try:
                Webhook(secret).verify(body, headers)
                verified = True
            except WebhookVerificationError:
                verified = False
        with self._changed:
            queue = self.statuses[path]
            status = queue.pop(0) if queue else 200
            self.received.append(Delivery(path, headers, body, verified, status))
            self._changed.notify_all()
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"ok"})
