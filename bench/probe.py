"""Single-connection probes: time to first streamed byte at concurrency 1, and start-up time."""

from __future__ import annotations

import http.client
import statistics
import time
from dataclasses import dataclass

from bench.processes import BenchError, Child
from bench.target import Endpoint


@dataclass(frozen=True)
class Ttfb:
    samples: int
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    headers: dict[str, str]


def _headers(endpoint: Endpoint) -> dict[str, str]:
    return {"Content-Type": "application/json", **endpoint.headers}


def call(endpoint: Endpoint, timeout: float = 30, method: str = "POST") -> Reply:
    """One request on a fresh connection, the whole answer read."""
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)
    try:
        return call_on(conn, endpoint, method)
    finally:
        conn.close()


def call_on(conn: http.client.HTTPConnection, endpoint: Endpoint, method: str = "POST") -> Reply:
    """One request on `conn`, kept alive for the next (as wrk and the SDKs' pools keep theirs)."""
    target = endpoint.path + (f"?{endpoint.query}" if endpoint.query else "")
    conn.request(method, target, body=endpoint.body or None, headers=_headers(endpoint))
    resp = conn.getresponse()
    return Reply(resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()})


def _percentile(values: list[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def time_to_first_byte(endpoint: Endpoint, samples: int, warmup: int = 20) -> Ttfb:
    """Sequential streamed calls on one keep-alive connection; time from send to the first body byte."""
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=30)
    times: list[float] = []
    try:
        for i in range(warmup + samples):
            started = time.perf_counter()
            conn.request("POST", endpoint.path, body=endpoint.body, headers=_headers(endpoint))
            resp = conn.getresponse()
            first = resp.read(1)
            elapsed = time.perf_counter() - started
            rest = resp.read()
            body = first + rest
            if resp.status != 200 or not body.rstrip().endswith(b"data: [DONE]"):
                raise BenchError(f"streamed call to {endpoint.url} answered {resp.status}: {body[:300]!r}")
            if i >= warmup:
                times.append(elapsed * 1000)
    finally:
        conn.close()
    return Ttfb(len(times), statistics.median(times), _percentile(times, 99))


def time_to_first_answer(child: Child, endpoint: Endpoint, timeout: float, patience: float = 5) -> float:
    """Seconds from the child's start to its first 200 answer to `endpoint` (polled every 5 ms).

    Once the server answers at all, it has `patience` seconds to turn a refusal into a 200.
    """
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        child.check_alive()
        try:
            reply = call(endpoint, timeout=10)
        except OSError as exc:
            last = str(exc)
            time.sleep(0.005)
            continue
        if reply.status == 200:
            return time.perf_counter() - child.started_at
        last = f"{reply.status}: {reply.body[:300]!r}"
        deadline = min(deadline, time.monotonic() + patience)
        time.sleep(0.05)
    raise BenchError(f"{child.name} gave no 200 to {endpoint.url} (last: {last})")


def check_answers(endpoint: Endpoint, stream: bool) -> None:
    """Refuse to measure error answers: the call must succeed and look like a completion."""
    reply = call(endpoint)
    text = reply.body
    ok = reply.status == 200 and (
        text.rstrip().endswith(b"data: [DONE]") if stream else b'"chat.completion"' in text
    )
    if not ok:
        raise BenchError(f"{endpoint.url} answered {reply.status}: {text[:400]!r}")
