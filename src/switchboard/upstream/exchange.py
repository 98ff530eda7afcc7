"""One HTTP exchange with a provider over the shared pool: timed, and failures mapped on the way out."""

from __future__ import annotations

import asyncio

import httpx
import orjson

from switchboard.errors import BadRequest, UpstreamUnanswered
from switchboard.upstream import provider_errors
from switchboard.upstream.egress import WRITTEN, Written
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.types import Timeouts, UpstreamTarget

ERROR_BODY_LIMIT = 64 * 1024
FAILURES = (httpx.HTTPError, OSError, TimeoutError)


def build(
    pool: ClientPool, target: UpstreamTarget, url: str, body: object, headers: dict[str, str]
) -> httpx.Request:
    try:
        content = orjson.dumps(body)
    except orjson.JSONEncodeError:
        raise BadRequest("the request body cannot be encoded as JSON") from None
    headers = {"content-type": "application/json", "accept-encoding": "identity", **headers}
    return pool.client(target.allow_private).build_request("POST", url, content=content, headers=headers)


async def open_response(
    pool: ClientPool, target: UpstreamTarget, request: httpx.Request, deadline: float
) -> httpx.Response:
    """The response once its headers arrived (by `deadline`); provider errors raised as the gateway's."""
    written = Written()
    marker = WRITTEN.set(written)
    try:
        async with asyncio.timeout_at(deadline):
            response = await pool.client(target.allow_private).send(request, stream=True)
    except FAILURES as exc:
        if isinstance(exc, TimeoutError) and written.value:  # it may be running: not sent again (§21)
            raise UpstreamUnanswered() from None
        raise provider_errors.from_transport(exc) from None
    finally:
        WRITTEN.reset(marker)
    if response.status_code >= 400:
        try:
            body = await read_body(response, pool.timeouts, ERROR_BODY_LIMIT)
        except FAILURES:
            body = b""
        finally:
            await response.aclose()
        raise provider_errors.from_response(response.status_code, response.headers, body, target.secret)
    return response


async def read_body(response: httpx.Response, timeouts: Timeouts, limit: int | None) -> bytes:
    """The body, each read bounded by the idle timeout (and the size by `limit`, for error bodies)."""
    parts: list[bytes] = []
    size = 0
    chunks = response.aiter_bytes()
    while True:
        async with asyncio.timeout(timeouts.idle):
            chunk = await anext(chunks, None)
        if chunk is None:
            break
        parts.append(chunk)
        size += len(chunk)
        if limit is not None and size >= limit:
            break
    return b"".join(parts)


async def post_json(pool: ClientPool, target: UpstreamTarget, request: httpx.Request) -> bytes:
    """A whole non-streamed exchange: first-byte deadline for the headers, idle timeout for the body."""
    deadline = asyncio.get_running_loop().time() + pool.timeouts.first_byte
    response = await open_response(pool, target, request, deadline)
    try:
        return await read_body(response, pool.timeouts, None)
    except FAILURES as exc:
        raise provider_errors.from_transport(exc) from None
    finally:
        await response.aclose()
