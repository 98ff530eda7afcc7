"""Records every response body the suite sees, so one test-wide check can look for leaked secrets."""

from __future__ import annotations

import functools
import ssl
import threading

import certifi
import httpx

SEPARATOR = "\0"


class ResponseRecorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bodies: list[bytes] = []
        self.headers: list[str] = []
        self.secrets: set[str] = set()

    def remember_secret(self, secret: str) -> str:
        assert SEPARATOR not in secret  # leaks() looks for it in everything recorded, joined by these
        with self._lock:
            self.secrets.add(secret)
        return secret

    def record(self, response: httpx.Response) -> None:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            # Reading here would consume a stream before the test does (and never end for an
            # endless one); streamed bodies are relayed provider bytes, checked by the /v1 tests.
            with self._lock:
                self.headers.append(str(list(response.headers.items())))
            return
        response.read()
        with self._lock:
            self.bodies.append(response.content)
            self.headers.append(str(list(response.headers.items())))

    def leaks(self) -> list[str]:
        """The secrets that appear in any recorded body or headers. Each is looked for once in all of
        them joined (a secret never holds the separator, so none is found across two): looking in each
        body in turn made this secrets x bodies Python steps, tens of seconds at the end of a worker's
        run, which records thousands of each."""
        with self._lock:
            bodies = SEPARATOR.encode().join(self.bodies)
            headers = SEPARATOR.join(self.headers)
            return [
                secret[:4] + "…" for secret in self.secrets if secret.encode() in bodies or secret in headers
            ]


RECORDER = ResponseRecorder()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CAs), made once a process and shared by the test
    clients: each `httpx.Client()` otherwise loads the CA bundle again (~17 ms of CPU), and the suite
    makes thousands of clients, nearly all to plain-HTTP loopback gateways that never use it."""
    return ssl.create_default_context(cafile=certifi.where())


def recording_client(base_url: str, token: str | None = None, **kwargs: object) -> httpx.Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(
        base_url=base_url,
        headers=headers,
        timeout=30.0,
        event_hooks={"response": [RECORDER.record]},
        verify=tls_context(),
        **kwargs,  # type: ignore[arg-type]
    )
