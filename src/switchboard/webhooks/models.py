"""Tables of the webhooks domain: the endpoints, their outbox of deliveries, and the marks that make
an event of a limit's window fire once."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, LargeBinary, String, Text, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class WebhookRow(Base):
    __tablename__ = "webhooks"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JSON)
    # None: an Admin's webhook, which receives every event; else only that economy's.
    economy_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True, index=True)
    active: Mapped[bool] = mapped_column(Boolean)
    # kit.crypto sealed value of the `whsec_…` signing secret, bound to the webhook's id.
    sealed_secret: Mapped[bytes] = mapped_column(LargeBinary)
    created_by: Mapped[uuid.UUID] = mapped_column(Uuid)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class DeliveryRow(Base):
    """One event for one webhook: the outbox row, and the delivery log GET …/deliveries reads."""

    __tablename__ = "webhook_deliveries"

    # Sent as `webhook-id` (msg_<hex>), the same on every attempt.
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    # Deleting a webhook deletes its outbox and log with it.
    webhook_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(64))
    # The exact body every attempt sends: `{type, timestamp, data}`.
    body: Mapped[str] = mapped_column(Text)
    # pending, delivered, or failed (24 h of attempts without a 2xx).
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    # When the next attempt is due; a claimed row's is pushed a lease ahead, so that a replica dying
    # mid-attempt leaves the row to another once that lease has passed.
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(64), nullable=True)
    response_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_log", "webhook_id", "created_at", "id"),
    )


class EventMarkRow(Base):
    """An event that fires once per limit, window and threshold: its key, written with the event's
    deliveries in one transaction, so that replicas racing to send it send it once."""

    __tablename__ = "webhook_event_marks"

    event_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    subject: Mapped[str] = mapped_column(String(64), primary_key=True)  # a limit's or credential's id
    window_start: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    threshold: Mapped[int] = mapped_column(Integer, primary_key=True)  # 0 where there is none
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
