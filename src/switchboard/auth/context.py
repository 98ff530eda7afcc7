"""What the embedded-auth services share, built once at start-up and reached through a dependency
(`Auth`, in switchboard.auth.dependencies: FastAPI stays out of the CLI commands that use this)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from switchboard.auth.hashing import KeyedHasher, Passwords
from switchboard.auth.throttle import LoginThrottle
from switchboard.auth.tokens import TokenCodec
from switchboard.db.engine import make_sessionmaker


@dataclass
class AuthContext:
    codec: TokenCodec
    # For the steps that must commit on their own (a refused refresh still revokes its family).
    sessionmaker: async_sessionmaker[AsyncSession]
    # Autocommit sessions for the per-request key and revocation reads: no BEGIN and ROLLBACK
    # around them, so each is one round trip.
    reader: async_sessionmaker[AsyncSession]
    api_key_hash: KeyedHasher
    refresh_hash: KeyedHasher
    passwords: Passwords = field(default_factory=Passwords)
    throttle: LoginThrottle = field(default_factory=LoginThrottle)

    @classmethod
    def build(cls, codec: TokenCodec, jwt_secret: str, engine: AsyncEngine) -> AuthContext:
        return cls(
            codec=codec,
            sessionmaker=make_sessionmaker(engine),
            reader=make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT")),
            api_key_hash=KeyedHasher(jwt_secret, "api-key-hash"),
            refresh_hash=KeyedHasher(jwt_secret, "refresh-token-hash"),
        )
