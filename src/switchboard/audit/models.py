"""Tables of the audit trail: the events, and the one chain-head row every append locks."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Text, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime

GENESIS = "0" * 64


class AuditEventRow(Base):
    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_at", "at"),
        Index("ix_audit_events_action", "action"),
        Index("ix_audit_events_target", "target_type", "target_id"),
        Index("ix_audit_events_actor_user_id", "actor_user_id"),
        Index("ix_audit_events_economy_id", "economy_id"),
        Index("ix_audit_events_room_id", "room_id"),
    )

    # The chain's order: handed out by the chain head under its lock, so it has no gaps.
    seq: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False
    )
    id: Mapped[uuid.UUID] = mapped_column(Uuid, unique=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    actor_user_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    actor_role: Mapped[str | None] = mapped_column(String(32), nullable=True)
    actor_auth_method: Mapped[str] = mapped_column(String(32))
    actor_api_key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    actor_delegation_token_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    action: Mapped[str] = mapped_column(String(64))
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    changes: Mapped[str] = mapped_column(Text)  # canonical JSON of {field: [before, after]}
    request_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    ip: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # Whose event it is, for the visibility rules of GET /audit (an economy's, a room's).
    economy_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    room_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class AuditChainHead(Base):
    """One row (id 1): the last event's sequence number and hash, locked by every append."""

    __tablename__ = "audit_chain_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    seq: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))
