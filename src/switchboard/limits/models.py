"""Tables of the limits domain: the limits, their counters per window, and the holds of running calls."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Float, Index, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class LimitRow(Base):
    __tablename__ = "limits"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    subject_type: Mapped[str] = mapped_column(String(16))
    # A user, room or api key id (a UUID), an economy id, or an agent id (a string of its own).
    subject_id: Mapped[str] = mapped_column(String(64))
    economy_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    metric: Mapped[str] = mapped_column(String(16))
    # "window" is a reserved word in SQL.
    window: Mapped[str] = mapped_column("time_window", String(16))
    # Integer string: text keeps any size exact on both databases.
    amount: Mapped[str] = mapped_column(String(40))
    allow_unpriced: Mapped[bool] = mapped_column(Boolean)
    # "api", "config" (the config file is its source of truth) or "budget" (an economy's budget).
    managed_by: Mapped[str] = mapped_column(String(16))
    created_by: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    # Who set it (authority.py): "owner", "admin", "superadmin" or "operator"; only that level or
    # above may change or delete it (migration 0013).
    authority: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index("ix_limits_subject", "subject_type", "subject_id"),)


class LimitUsageRow(Base):
    """What a limit has counted in one window (calendar windows), or its bucket's debt (rolling ones)."""

    __tablename__ = "limit_usage"
    # SQLite: the key is the table (no rowid b-tree beside it): one page less to write per settlement.
    __table_args__ = {"sqlite_with_rowid": False}

    limit_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    used: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # A rolling window's refill per second as of its last settlement (0 for a calendar window).
    rate: Mapped[float | None] = mapped_column(Float, nullable=True)


class LimitHoldRow(Base):
    """A running call's reservation against one limit; leased, so a dead replica's holds run out.

    Keyed by (limit, call) and nothing else (migration 0012): a reservation sums a limit's holds by
    its key, a settlement deletes its call's by the key, and each index more would be one more page
    written twice per call. Only running calls have rows: the upkeep's reads by lease scan a few.
    """

    __tablename__ = "limit_holds"

    limit_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    call_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    amount: Mapped[int] = mapped_column(BigInteger)
    lease_until: Mapped[datetime] = mapped_column(UTCDateTime())
    # The call, for the `abandoned` record recovery writes if the call never settles.
    call: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)

    __table_args__ = {"sqlite_with_rowid": False}
