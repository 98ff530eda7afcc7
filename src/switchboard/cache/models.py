"""The response_cache table: one sealed answer per key, with its size (the bound) and its expiry."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, LargeBinary
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class CachedAnswerRow(Base):
    __tablename__ = "response_cache"

    # SHA-256 of the canonical request and the scope of the credential that paid for the answer.
    key: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    # The answer, sealed with the credential key ring and bound to `key` (cache/entry.py).
    sealed: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ix_response_cache_created_at", "created_at"),
        Index("ix_response_cache_expires_at", "expires_at"),
    )
