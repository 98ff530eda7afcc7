"""Tables of the metering domain: economies, their participants and the usage records."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, Integer, String, Text, Uuid, false
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class EconomyRow(Base):
    __tablename__ = "economies"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    currency: Mapped[str] = mapped_column(String(16))
    markup_bps: Mapped[int] = mapped_column(Integer)
    # {"provider/model": {"input_per_mtok": "0.1" | None, "output_per_mtok": ...}}
    price_overrides: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Integer string in nano-units: text keeps any size exact on both databases.
    budget: Mapped[str | None] = mapped_column(String(40), nullable=True)
    # "config": declared in the config file, which stays its source of truth; "api": created over REST.
    managed_by: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ParticipantRow(Base):
    __tablename__ = "economy_participants"

    economy_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("economies.id", ondelete="CASCADE"), primary_key=True
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    kind: Mapped[str] = mapped_column(String(8))  # "user" | "room"
    role: Mapped[str] = mapped_column(String(8))  # "owner" | "member"
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index("ix_economy_participants_participant_id", "participant_id"),)


class UsageRecordRow(Base):
    """One row per model call. No foreign keys: a usage fact is kept whatever happens to its refs."""

    __tablename__ = "usage_records"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    request_id: Mapped[str] = mapped_column(String(128))
    occurred_at: Mapped[datetime] = mapped_column(UTCDateTime())
    economy_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    user_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    room_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    agent_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    session_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    credential_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    credential_scope: Mapped[str] = mapped_column(String(16))
    provider: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(200))
    selector: Mapped[str] = mapped_column(String(300))
    endpoint: Mapped[str] = mapped_column(String(64))
    stream: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String(16))
    error_code: Mapped[str | None] = mapped_column(String(64), nullable=True)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    cached_tokens: Mapped[int] = mapped_column(Integer)
    reasoning_tokens: Mapped[int] = mapped_column(Integer)
    cost: Mapped[int] = mapped_column(BigInteger)  # nano-units of the economy's currency
    priced: Mapped[bool] = mapped_column(Boolean)
    # The prices the cost was computed with, kept for audit.
    input_per_mtok: Mapped[str | None] = mapped_column(String(40), nullable=True)
    output_per_mtok: Mapped[str | None] = mapped_column(String(40), nullable=True)
    markup_bps: Mapped[int] = mapped_column(Integer)
    price_source: Mapped[str | None] = mapped_column(String(40), nullable=True)
    latency_ms: Mapped[int] = mapped_column(Integer)
    ttft_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), nullable=True)
    usage_estimated: Mapped[bool] = mapped_column(Boolean, server_default=false(), default=False)
    api_key_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    # 1, 2, … for the attempts of one call (SPEC §14: each is a record sharing the request_id).
    attempt: Mapped[int] = mapped_column(Integer, server_default="1", default=1)
    # SPEC §20's token classes and the prices applied to each (a JSON map class -> per-million price).
    cache_write_tokens: Mapped[int] = mapped_column(Integer, server_default="0", default=0)
    cache_write_1h_tokens: Mapped[int] = mapped_column(Integer, server_default="0", default=0)
    service_tier: Mapped[str | None] = mapped_column(String(32), nullable=True)
    prices: Mapped[str | None] = mapped_column(Text, nullable=True)
    # SPEC §23: served from the response cache (tokens of the stored answer, cost 0).
    cache_hit: Mapped[bool] = mapped_column(Boolean, server_default=false(), default=False)

    __table_args__ = (
        Index("ix_usage_records_economy_time", "economy_id", "occurred_at", "id"),
        Index("ix_usage_records_user_time", "user_id", "occurred_at", "id"),
        Index("ix_usage_records_agent_session", "agent_id", "session_id"),
    )


class _RollupColumns:
    """What a rollup row sums: the records of one period per key (see UsageRollupRow)."""

    economy_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    # The period's first moment: of the five minutes, the hour or the UTC day (one table per tier).
    hour: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    room_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    provider: Mapped[str] = mapped_column(String(32), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), primary_key=True)
    # The API key the calls were made with; the nil UUID for calls made with a token.
    api_key_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger)
    completion_tokens: Mapped[int] = mapped_column(BigInteger)
    cached_tokens: Mapped[int] = mapped_column(BigInteger)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger)
    cost: Mapped[int] = mapped_column(BigInteger)
    unpriced_requests: Mapped[int] = mapped_column(BigInteger)
    cache_write_tokens: Mapped[int] = mapped_column(BigInteger, server_default="0", default=0)

    # SQLite: the rows live in their primary key's B-tree, so that an upsert writes one tree, not two.
    __table_args__: Any = {"sqlite_with_rowid": False}


class UsageRollupRow(_RollupColumns, Base):
    """Sums of the usage records of one hour per key, kept by the usage writer in the records' transaction.

    Summaries read these for whole hours (metering/rollup_summary.py). Key columns are never null, so
    that the primary key can take the upsert on both databases: a call without a room (or API key)
    has the nil UUID, one without an agent the empty string (metering/rollups.py maps them back to null).
    """

    __tablename__ = "usage_rollups"


class UsageDailyRollupRow(_RollupColumns, Base):
    """The same sums per UTC day (`hour` is the day's 00:00): a month's summary reads ~30 rows per key."""

    __tablename__ = "usage_daily_rollups"


class UsageFiveMinuteRollupRow(_RollupColumns, Base):
    """The same sums per five minutes (from :00, :05, …): the partial hours at a range's ends.

    Retention deletes these with the records: they stand in for the records, not for the hourly rows.
    """

    __tablename__ = "usage_5min_rollups"
