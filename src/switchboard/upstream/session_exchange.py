"""One exchange with a provider over the shared aiohttp session: timed, and failures mapped on the way out."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp
from yarl import URL

from switchboard.errors import UpstreamFailed
from switchboard.upstream import provider_errors
from switchboard.upstream.types import Timeouts, UpstreamTarget

ERROR_BODY_LIMIT = 64 * 1024
# ValueError: aiohttp refuses to send a header value it cannot encode (a stored key with a line break).
FAILURES = (aiohttp.ClientError, OSError, TimeoutError, ValueError)


async def open_response(
    session: aiohttp.ClientSession,
    timeouts: Timeouts,
    target: UpstreamTarget,
    url: URL,
    content: bytes,
    headers: Mapping[str, str],
    deadline: float,
) -> aiohttp.ClientResponse:
    """The response once its headers arrived (by `deadline`); provider errors raised as the gateway's.

    Cancelled or timed out before the headers, aiohttp closes the connection: the provider stops.
    """
    try:
        async with asyncio.timeout_at(deadline):
            response = await session.post(url, data=content, headers=headers, allow_redirects=False)
    except FAILURES as exc:
        raise provider_errors.from_transport(exc) from None
    if 300 <= response.status < 400:  # redirects are not followed: a provider never sends one
        finish(response)
        raise UpstreamFailed(f"the provider answered with a redirect ({response.status}), not followed")
    if response.status >= 400:
        try:
            body = await read_body(response, timeouts.idle, ERROR_BODY_LIMIT)
        except FAILURES:
            body = b""
        finally:
            finish(response)
        raise provider_errors.from_response(response.status, response.headers, body, target.secret)
    return response


async def read_body(response: aiohttp.ClientResponse, idle: float, limit: int | None) -> bytes:
    """The body, each read bounded by the idle timeout (and the size by `limit`, for error bodies)."""
    content = response.content
    if limit is None and content.is_eof():
        return content.read_nowait()  # the whole body came with the headers: no timer, no wait
    loop = asyncio.get_running_loop()
    parts: list[bytes] = []
    size = 0
    async with asyncio.timeout(idle) as timer:
        while chunk := await content.readany():
            parts.append(chunk)
            size += len(chunk)
            if content.at_eof() or (limit is not None and size >= limit):
                break
            timer.reschedule(loop.time() + idle)
    return b"".join(parts)


def finish(response: aiohttp.ClientResponse) -> None:
    """Read to the end, the connection goes back to the pool; otherwise it is dropped (the provider
    sees the disconnect and stops), never pooled half-read."""
    if response.content.at_eof():
        response.release()
    else:
        response.close()


async def post_json(
    session: aiohttp.ClientSession,
    timeouts: Timeouts,
    target: UpstreamTarget,
    url: URL,
    content: bytes,
    headers: Mapping[str, str],
) -> bytes:
    """A whole non-streamed exchange: first-byte deadline for the headers, idle timeout for the body."""
    deadline = asyncio.get_running_loop().time() + timeouts.first_byte
    response = await open_response(session, timeouts, target, url, content, headers, deadline)
    try:
        return await read_body(response, timeouts.idle, None)
    except FAILURES as exc:
        raise provider_errors.from_transport(exc) from None
    finally:
        finish(response)
