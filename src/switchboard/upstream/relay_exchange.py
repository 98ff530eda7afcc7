"""One exchange with a provider over a pooled connection: timed, and failures mapped on the way out."""

from __future__ import annotations

import asyncio

from switchboard.errors import UpstreamDropped, UpstreamFailed, UpstreamUnanswered
from switchboard.upstream import provider_errors
from switchboard.upstream.connection_pool import ConnectionPool
from switchboard.upstream.endpoints import Endpoint
from switchboard.upstream.http1 import BodyTooLarge, Http1Connection, ProtocolFailure
from switchboard.upstream.types import Timeouts, UpstreamTarget

ERROR_BODY_LIMIT = 64 * 1024
# OSError covers refused connects, resets, TLS and malformed answers; ValueError a key that cannot
# be sent in a header.
FAILURES = (OSError, TimeoutError, ValueError)


async def open_response(
    pool: ConnectionPool,
    timeouts: Timeouts,
    target: UpstreamTarget,
    endpoint: Endpoint,
    content: bytes,
    deadline: float,
    headers: bytes = b"",
) -> Http1Connection:
    """The connection once the response headers arrived (by `deadline`); provider errors raised as
    the gateway's. Cancelled or timed out before that, the connection is closed: the provider stops.
    """
    if target.trace_headers:
        headers += target.trace_headers
    try:
        request = endpoint.request(target.secret, content, headers)
        conn = _sent_on_pooled(pool, endpoint, request)
        if conn is None:
            conn = await pool.connect(endpoint.origin, deadline, target.connect)
            _send(pool, conn, request)
    except FAILURES as exc:
        raise provider_errors.from_transport(exc) from None
    try:
        await conn.wait_headers(deadline)
    except BaseException as exc:
        pool.release(conn)  # the answer has not ended, so this closes the connection
        # The request went out and no status came back: it may have run, so it is never sent
        # again (SPEC §21), whether the connection broke or the first-byte deadline passed.
        if isinstance(exc, TimeoutError):
            raise UpstreamUnanswered() from None
        if isinstance(exc, FAILURES):
            raise UpstreamDropped() from None
        raise
    status = conn.status
    if 300 <= status < 400:  # redirects are not followed: a provider never sends one
        pool.release(conn)
        raise UpstreamFailed(f"the provider answered with a redirect ({status}), not followed")
    if status >= 400:
        try:
            body = await read_body(conn, timeouts.idle, ERROR_BODY_LIMIT)
        except FAILURES:
            body = b""
        finally:
            pool.release(conn)
        raise provider_errors.from_response(status, conn.headers, body, target.secret)
    return conn


def _sent_on_pooled(pool: ConnectionPool, endpoint: Endpoint, request: bytes) -> Http1Connection | None:
    """The pooled connection the request was written on, or None when none was left open (a stale
    one found before writing costs nothing: the request goes on a fresh connection)."""
    while (conn := pool.reuse(endpoint.origin)) is not None:
        try:
            conn.send(request)
        except ProtocolFailure:  # closed before anything was written
            pool.release(conn)
            continue
        return conn
    return None


def _send(pool: ConnectionPool, conn: Http1Connection, request: bytes) -> None:
    try:
        conn.send(request)
    except BaseException:
        pool.release(conn)
        raise


async def read_body(conn: Http1Connection, idle: float, limit: int | None) -> bytes:
    """The body, each wait bounded by the idle timeout (and the size by `limit`, for error bodies).

    A body that came with the headers is taken without a timer or a wait.
    """
    body = conn.take()
    if conn.at_eof:
        return body
    loop = asyncio.get_running_loop()
    parts = [body] if body else []
    size = len(body)
    while not conn.at_eof and (limit is None or size < limit):
        await conn.wait_body(loop.time() + idle)
        chunk = conn.take()
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


async def post_json(
    pool: ConnectionPool,
    timeouts: Timeouts,
    target: UpstreamTarget,
    endpoint: Endpoint,
    content: bytes,
    headers: bytes = b"",
) -> bytes:
    """A whole non-streamed exchange: first-byte deadline for the headers, idle timeout for the body."""
    deadline = asyncio.get_running_loop().time() + (target.first_byte or timeouts.first_byte)
    conn = await open_response(pool, timeouts, target, endpoint, content, deadline, headers)
    try:
        body = await read_body(conn, timeouts.idle, timeouts.max_body_bytes + 1)
    except BodyTooLarge:
        raise _too_large(timeouts) from None
    except FAILURES as exc:
        raise provider_errors.from_transport(exc) from None
    finally:
        pool.release(conn)
    if len(body) > timeouts.max_body_bytes:
        raise _too_large(timeouts)
    return body


def _too_large(timeouts: Timeouts) -> UpstreamFailed:
    return UpstreamFailed(f"the provider's answer is over {timeouts.max_body_bytes} bytes")
