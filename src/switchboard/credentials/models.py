"""The table of provider keys: metadata in the clear, the secret only as a row-bound ciphertext."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, LargeBinary, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

import switchboard.groups.models  # noqa: F401  (registers `rooms`, which room credentials reference)
from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class LlmCredential(Base):
    __tablename__ = "llm_credentials"
    __table_args__ = (
        CheckConstraint("scope IN ('user', 'room')", name="scope"),
        CheckConstraint(
            "(scope = 'user' AND user_id IS NOT NULL AND room_id IS NULL)"
            " OR (scope = 'room' AND room_id IS NOT NULL AND user_id IS NULL)",
            name="owner",
        ),
        Index("ix_llm_credentials_user_id", "user_id"),
        Index("ix_llm_credentials_room_id", "room_id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))  # the longest litellm kind is 25
    scope: Mapped[str] = mapped_column(String(8))
    user_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    # Deleting a room deletes its credentials with it.
    room_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("rooms.id", ondelete="CASCADE"), nullable=True
    )
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    base_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    secret_hint: Mapped[str] = mapped_column(String(4))
    # kit.crypto sealed value (key id, nonce, AES-GCM ciphertext) bound to id, scope, owner, provider.
    sealed_secret: Mapped[bytes] = mapped_column(LargeBinary)
    created_by: Mapped[uuid.UUID] = mapped_column(Uuid)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    @property
    def owner_id(self) -> uuid.UUID:
        """The user or room the secret is bound to."""
        owner = self.user_id if self.scope == "user" else self.room_id
        assert owner is not None  # guaranteed by the `owner` check constraint
        return owner
