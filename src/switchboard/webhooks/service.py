"""The /webhooks use cases: create (the secret shown once), list, read, change, delete, the delivery
log, and a test event."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import and_, event, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.credentials.egress import check_egress
from switchboard.errors import NotFound, ValidationFailed
from switchboard.kit.clock import utcnow
from switchboard.kit.crypto import Keyring
from switchboard.kit.pagination import Page, check_limit, encode_cursor, time_id_cursor
from switchboard.metering.service import find_economy
from switchboard.webhooks import access
from switchboard.webhooks.events import TEST
from switchboard.webhooks.hub import WebhookHub
from switchboard.webhooks.models import DeliveryRow, WebhookRow
from switchboard.webhooks.outbox import enqueue, message_id
from switchboard.webhooks.schemas import (
    DeliveryOut,
    WebhookCreate,
    WebhookCreated,
    WebhookOut,
    WebhookUpdate,
)
from switchboard.webhooks.secrets import new_secret, seal

DELIVERY_STATUSES = ("pending", "delivered", "failed")


@dataclass(frozen=True)
class Setup:
    """What the routes need besides the request: `app.state.webhook_setup`."""

    hub: WebhookHub
    keyring: Keyring
    allow_private: bool


def webhook_out(row: WebhookRow) -> WebhookOut:
    return WebhookOut(
        id=row.id,
        url=row.url,
        events=list(row.events),
        economy_id=row.economy_id,
        active=row.active,
        created_by=row.created_by,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _after_commit(session: AsyncSession, hub: WebhookHub) -> None:
    """This process's subscriptions reload once the change is committed (others within 2 s)."""
    event.listen(session.sync_session, "after_commit", lambda _session: hub.changed(), once=True)


async def _url(url: str, setup: Setup) -> str:
    clean = url.strip()  # whitespace around a pasted URL; inside it, check_egress refuses it
    await check_egress(clean, setup.allow_private, field="url")
    return clean


async def create(
    session: AsyncSession, principal: Principal, body: WebhookCreate, setup: Setup
) -> WebhookCreated:
    access.require_writer(principal)
    economy_id = None
    if body.economy_id is not None:
        economy = await find_economy(session, body.economy_id)
        if economy is None:
            raise NotFound("economy not found")
        economy_id = economy.id
    await access.check_create(session, principal, economy_id)
    url = await _url(body.url, setup)
    secret = new_secret()
    now = utcnow()
    row = WebhookRow(
        id=uuid.uuid4(),
        url=url,
        events=list(body.events),
        economy_id=economy_id,
        active=body.active,
        created_by=principal.user_id,
        created_at=now,
        updated_at=now,
    )
    row.sealed_secret = seal(setup.keyring, row.id, secret)
    session.add(row)
    await session.flush()
    _after_commit(session, setup.hub)
    return WebhookCreated(**webhook_out(row).model_dump(), secret=secret)


async def list_webhooks(
    session: AsyncSession, principal: Principal, economy_ref: str | None, cursor: str | None, limit: int
) -> Page[WebhookOut]:
    """Oldest first."""
    check_limit(limit)
    after = time_id_cursor(cursor)
    query = select(WebhookRow).order_by(WebhookRow.created_at, WebhookRow.id).limit(limit + 1)
    reach = await access.reach_of(session, principal)
    if reach is not None:
        query = query.where(reach)
    if economy_ref is not None:
        economy = await find_economy(session, economy_ref)
        if economy is None:
            raise NotFound("economy not found")
        query = query.where(WebhookRow.economy_id == economy.id)
    if after is not None:
        query = query.where(
            or_(
                WebhookRow.created_at > after[0],
                and_(WebhookRow.created_at == after[0], WebhookRow.id > after[1]),
            )
        )
    rows = list(await session.scalars(query))
    following = None
    if len(rows) > limit:
        last = rows[limit - 1]
        following = encode_cursor([last.created_at.isoformat(), str(last.id)])
    return Page[WebhookOut](data=[webhook_out(row) for row in rows[:limit]], next_cursor=following)


async def read(session: AsyncSession, principal: Principal, webhook_id: uuid.UUID) -> WebhookOut:
    return webhook_out(await access.managed(session, principal, webhook_id))


async def change(
    session: AsyncSession, principal: Principal, webhook_id: uuid.UUID, body: WebhookUpdate, setup: Setup
) -> WebhookOut:
    access.require_writer(principal)
    row = await access.managed(session, principal, webhook_id)
    if body.url is not None:
        row.url = await _url(body.url, setup)
    if body.events is not None:
        row.events = list(body.events)
    if body.active is not None:
        row.active = body.active
    if body.model_fields_set:
        row.updated_at = utcnow()
        await session.flush()
        _after_commit(session, setup.hub)
    return webhook_out(row)


async def delete(session: AsyncSession, principal: Principal, webhook_id: uuid.UUID, setup: Setup) -> None:
    access.require_writer(principal)
    row = await access.managed(session, principal, webhook_id)
    await session.delete(row)
    await session.flush()
    _after_commit(session, setup.hub)


def delivery_out(row: DeliveryRow) -> DeliveryOut:
    return DeliveryOut(
        id=message_id(row.id),
        webhook_id=row.webhook_id,
        event_type=row.event_type,
        status=row.status,  # type: ignore[arg-type]
        attempts=row.attempts,
        last_error=row.last_error,
        response_status=row.response_status,
        created_at=row.created_at,
        last_attempt_at=row.last_attempt_at,
        next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
        delivered_at=row.delivered_at,
    )


async def deliveries(
    session: AsyncSession,
    principal: Principal,
    webhook_id: uuid.UUID,
    status: str | None,
    cursor: str | None,
    limit: int,
) -> Page[DeliveryOut]:
    """Newest first: the delivery log."""
    check_limit(limit)
    after = time_id_cursor(cursor)
    if status is not None and status not in DELIVERY_STATUSES:
        raise ValidationFailed(f"status must be one of {', '.join(DELIVERY_STATUSES)}", param="status")
    await access.managed(session, principal, webhook_id)
    query = (
        select(DeliveryRow)
        .where(DeliveryRow.webhook_id == webhook_id)
        .order_by(DeliveryRow.created_at.desc(), DeliveryRow.id.desc())
        .limit(limit + 1)
    )
    if status is not None:
        query = query.where(DeliveryRow.status == status)
    if after is not None:
        query = query.where(
            or_(
                DeliveryRow.created_at < after[0],
                and_(DeliveryRow.created_at == after[0], DeliveryRow.id < after[1]),
            )
        )
    rows = list(await session.scalars(query))
    following = None
    if len(rows) > limit:
        last = rows[limit - 1]
        following = encode_cursor([last.created_at.isoformat(), str(last.id)])
    return Page[DeliveryOut](data=[delivery_out(row) for row in rows[:limit]], next_cursor=following)


async def send_test(
    session: AsyncSession, principal: Principal, webhook_id: uuid.UUID, setup: Setup
) -> DeliveryOut:
    """A `webhook.test` event to this webhook alone, whatever it subscribes to; sent like any other."""
    access.require_writer(principal)
    row = await access.managed(session, principal, webhook_id)
    data = {"webhook_id": str(row.id), "message": "a test event from Switchboard"}
    [delivery_id] = await enqueue(session, TEST, data, row.economy_id, webhook_id=row.id)
    delivery = await session.get(DeliveryRow, delivery_id)
    assert delivery is not None
    event.listen(session.sync_session, "after_commit", lambda _session: setup.hub.wake(), once=True)
    return delivery_out(delivery)
