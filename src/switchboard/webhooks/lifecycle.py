"""Webhooks at start: the hub the pipeline's events go to, the delivery client on the egress guard,
and the dispatcher's task."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
from fastapi import FastAPI

from switchboard.credentials.lifecycle import keyring_from
from switchboard.settings import Settings
from switchboard.upstream.egress import Egress
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.types import Timeouts
from switchboard.webhooks.dispatcher import Dispatcher
from switchboard.webhooks.hub import WebhookHub
from switchboard.webhooks.sender import ATTEMPT_SECONDS, Sender
from switchboard.webhooks.service import Setup

_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=16, keepalive_expiry=30.0)


async def startup(app: FastAPI) -> None:
    settings: Settings = app.state.settings
    hub = WebhookHub(limits=getattr(app.state, "limits", None))
    keyring = keyring_from(settings)
    # Its own pool on the same guard and proxy as provider traffic (SPEC §21): redirects never followed.
    pool = ClientPool(
        Timeouts(
            connect=min(settings.upstream_connect_timeout, ATTEMPT_SECONDS),
            first_byte=ATTEMPT_SECONDS,
            idle=ATTEMPT_SECONDS,
        ),
        Egress(proxy=settings.egress_proxy, ca_bundle=settings.ca_bundle),
        _LIMITS,
    )
    sender = Sender(pool, settings.allow_private_upstreams)
    dispatcher = Dispatcher(
        hub,
        app.state.sessionmaker,
        app.state.engine,
        sender,
        keyring,
        first_retry=settings.webhook_first_retry_seconds,
        outage=getattr(app.state, "db_outage", None),
    )
    await dispatcher.reload()
    app.state.webhooks = hub
    app.state.webhook_setup = Setup(hub=hub, keyring=keyring, allow_private=settings.allow_private_upstreams)
    app.state.webhook_pool = pool
    app.state.webhook_dispatcher = dispatcher
    app.state.webhook_task = asyncio.create_task(dispatcher.run_forever(), name="webhook-dispatcher")


async def shutdown(app: FastAPI) -> None:
    task: asyncio.Task[None] | None = getattr(app.state, "webhook_task", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    pool: ClientPool | None = getattr(app.state, "webhook_pool", None)
    if pool is not None:
        await pool.aclose()
