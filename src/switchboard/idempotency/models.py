"""The idempotency_keys table: one row per (caller, key), claimed by INSERT and leased while running."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime

IN_FLIGHT = "in_flight"
DONE = "done"


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_keys"

    # The caller (a token's `sub`); keys of different callers never meet.
    scope: Mapped[str] = mapped_column(String(64), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))
    # Random id of the execution that holds the key, so that a replica whose lease was taken over
    # cannot complete or release a key it no longer owns.
    claim: Mapped[str] = mapped_column(String(32))
    lease_until: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    headers: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    body: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # The call a /v1 claim runs, for the `abandoned` record recovery writes if it never finishes.
    call: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)

    __table_args__ = (Index("ix_idempotency_keys_expires_at", "expires_at"),)
