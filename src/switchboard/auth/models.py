"""Tables of the embedded auth: users, API keys, refresh-token families, delegation tokens."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from switchboard.db.base import Base
from switchboard.db.types import UTCDateTime


class User(Base):
    """An account of the embedded auth: a password account (`switchboard user create`), or a person
    of the single sign-on issuer, known by (issuer, subject) from their first sign-in (SPEC §24)."""

    __tablename__ = "auth_users"
    __table_args__ = (UniqueConstraint("oidc_issuer", "oidc_subject", name="uq_auth_users_oidc"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    # Stored lower-cased so that one address is one account. None: an SSO person without an email.
    email: Mapped[str | None] = mapped_column(String(320), unique=True, nullable=True)
    role: Mapped[str] = mapped_column(String(32))
    # argon2id, PHC string; None for an SSO account, which has no password here.
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    oidc_issuer: Mapped[str | None] = mapped_column(String(512), nullable=True)
    oidc_subject: Mapped[str | None] = mapped_column(String(255), nullable=True)


class ApiKey(Base):
    """A long-lived key; only its keyed hash is kept, plus the owner's identity when it was issued."""

    __tablename__ = "auth_api_keys"
    __table_args__ = (Index("ix_auth_api_keys_user_id", "user_id"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    # No foreign key: the owner may be a user of the separate auth service, known only by `sub`.
    user_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    email: Mapped[str | None] = mapped_column(String(320), nullable=True)
    role: Mapped[str] = mapped_column(String(32))
    permissions: Mapped[list[str]] = mapped_column(JSON)
    service_name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(String(500))
    key_prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)  # HMAC-SHA256, hex
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class RefreshFamily(Base):
    """One sign-in and every refresh token rotated from it; revoking it ends them all."""

    __tablename__ = "auth_refresh_families"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    # Set when the sign-in was an API-key exchange: the family dies with the key.
    api_key_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("auth_api_keys.id", ondelete="CASCADE"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class RefreshToken(Base):
    """A single-use refresh token, stored as its keyed hash."""

    __tablename__ = "auth_refresh_tokens"
    __table_args__ = (Index("ix_auth_refresh_tokens_family_id", "family_id"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    family_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("auth_refresh_families.id", ondelete="CASCADE")
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class DelegationToken(Base):
    """A delegation JWT we minted, tracked by its `delegation_token_id` so that it can be revoked."""

    __tablename__ = "auth_delegation_tokens"
    __table_args__ = (Index("ix_auth_delegation_tokens_user_id", "user_id"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(Uuid)
    room_id: Mapped[uuid.UUID] = mapped_column(Uuid)  # a groups row, referred to by id only
    scope: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
