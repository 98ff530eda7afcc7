"""The outbox: an event becomes one delivery row per webhook that wants it, in the caller's transaction.

`enqueue` is what other domains call (the audit trail, in the transaction of the change it records);
`first_time` keys an event that must fire once (a limit's threshold in a window), so that replicas
racing to send it commit it once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Row, Select, Table, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from switchboard.db.upsert import insert_for
from switchboard.kit.clock import utcnow
from switchboard.webhooks.events import TEST, body_of
from switchboard.webhooks.models import DeliveryRow, EventMarkRow, WebhookRow

_WEBHOOKS = cast(Table, WebhookRow.__table__)
_DELIVERIES = cast(Table, DeliveryRow.__table__)
_MARKS = cast(Table, EventMarkRow.__table__)
PENDING = "pending"

Executor = AsyncSession | AsyncConnection


def message_id(delivery_id: uuid.UUID) -> str:
    """The `webhook-id` header: the same on every attempt of a delivery."""
    return f"msg_{delivery_id.hex}"


def wants(events: list[str], economy_id: uuid.UUID | None, event_type: str, of: uuid.UUID | None) -> bool:
    """Whether a webhook (its `events` and `economy_id`) receives an event of `event_type` about economy `of`:
    an Admin's webhook (no economy) every one, an economy's only its own."""
    return event_type in events and (economy_id is None or economy_id == of)


def _deliveries(
    rows: Sequence[Row[Any]],
    event_type: str,
    data: dict[str, Any],
    economy_id: uuid.UUID | None,
    webhook_id: uuid.UUID | None,
    at: datetime,
) -> list[dict[str, Any]]:
    targets = [
        row.id
        for row in rows
        if (event_type == TEST and webhook_id is not None)
        or wants(row.events, row.economy_id, event_type, economy_id)
    ]
    if not targets:
        return []
    body = body_of(event_type, at, data)
    return [
        {
            "id": uuid.uuid4(),
            "webhook_id": target,
            "event_type": event_type,
            "body": body,
            "status": PENDING,
            "attempts": 0,
            "next_attempt_at": at,
            "created_at": at,
        }
        for target in targets
    ]


def _subscribers(webhook_id: uuid.UUID | None) -> Select[Any]:
    query = select(_WEBHOOKS.c.id, _WEBHOOKS.c.events, _WEBHOOKS.c.economy_id)
    if webhook_id is not None:
        return query.where(_WEBHOOKS.c.id == webhook_id)
    return query.where(_WEBHOOKS.c.active.is_(True))


async def enqueue(
    session: Executor,
    event_type: str,
    data: dict[str, Any],
    economy_id: uuid.UUID | None = None,
    *,
    webhook_id: uuid.UUID | None = None,
    at: datetime | None = None,
) -> list[uuid.UUID]:
    """One pending delivery per active webhook subscribed to the event (or to `webhook_id` alone, for
    a test); committed with the caller's transaction, sent by any replica's dispatcher after it.
    Returns the deliveries' ids."""
    at = at or utcnow()
    rows = (await session.execute(_subscribers(webhook_id))).all()
    values = _deliveries(rows, event_type, data, economy_id, webhook_id, at)
    if values:
        await session.execute(insert(_DELIVERIES), values)
    return [value["id"] for value in values]


def enqueue_on(
    connection: Connection, event_type: str, data: dict[str, Any], economy_id: uuid.UUID | None = None
) -> None:
    """`enqueue` on a synchronous connection: for the audit trail, which appends its events from the
    ORM's flush (a sync context) in the transaction of the change."""
    at = utcnow()
    rows = connection.execute(_subscribers(None)).all()
    values = _deliveries(rows, event_type, data, economy_id, None, at)
    if values:
        connection.execute(insert(_DELIVERIES), values)


async def first_time(
    session: Executor, event_type: str, subject: str, window_start: datetime, threshold: int = 0
) -> bool:
    """True for the one transaction that marks this event first; False where it is marked already."""
    conn = await session.connection() if isinstance(session, AsyncSession) else session
    statement = (
        insert_for(conn.dialect.name)(_MARKS)
        .values(
            event_type=event_type,
            subject=subject,
            window_start=window_start,
            threshold=threshold,
            created_at=utcnow(),
        )
        .on_conflict_do_nothing()
        .returning(_MARKS.c.event_type)
    )
    return (await conn.execute(statement)).first() is not None
