"""The agent_versions table: one row per (agent id, version), the spec kept whole as JSON."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class AgentVersion(Base):
    __tablename__ = "agent_versions"
    __table_args__ = (UniqueConstraint("agent_id", "version", name="uq_agent_versions_agent_id_version"),)

    # A database-assigned sequence: "newest" means the highest row_id, one clock for every replica.
    row_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    agent_id: Mapped[str] = mapped_column(String(64))
    version: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(32))
    # Who may see the row: system | user | room | economy (see agents/visibility.py).
    tier: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str | None] = mapped_column(String(200), index=True)
    room_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, index=True)
    economy_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, index=True)
    # The authenticated creator (None for seeded rows); the spec's created_by is only a label.
    author_id: Mapped[uuid.UUID | None] = mapped_column(Uuid)
    display_name: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(Text)
    created_by: Mapped[str | None] = mapped_column(String(200))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    @property
    def retired(self) -> bool:
        return self.retired_at is not None
