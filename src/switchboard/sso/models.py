"""The console's pending SSO sign-ins: one row a `state`, used once, then a one-time session ticket."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import Index, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class SsoLogin(Base):
    """Only keyed hashes are kept: the `state` and the ticket are bearer values. The PKCE verifier and
    the nonce are derived from the state with the gateway's secret, so neither is stored at all."""

    __tablename__ = "auth_sso_logins"
    __table_args__ = (Index("ix_auth_sso_logins_created_at", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    user_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    ticket_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    ticket_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
