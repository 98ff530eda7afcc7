"""One-way storage forms: keyed hashes of issued tokens and argon2id hashes of passwords."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError


class KeyedHasher:
    """HMAC-SHA256 under a key derived from the JWT secret, one key per purpose.

    High-entropy tokens need no slow hash, but a keyed one means a copy of the database alone
    cannot even confirm a guessed token. Rotating the JWT secret therefore retires every stored key.
    """

    def __init__(self, jwt_secret: str, purpose: str) -> None:
        label = f"switchboard:{purpose}:v1".encode()
        self._key = hmac.new(jwt_secret.encode(), label, hashlib.sha256).digest()

    def __call__(self, token: str) -> str:
        return hmac.new(self._key, token.encode(), hashlib.sha256).hexdigest()


class Passwords:
    """argon2id (argon2-cffi's RFC 9106 low-memory profile: 64 MiB, 3 passes), off the event loop."""

    def __init__(self) -> None:
        self._hasher = PasswordHasher()
        self._dummy: str | None = None

    async def hash(self, password: str) -> str:
        return await asyncio.to_thread(self._hasher.hash, password)

    async def verify(self, stored: str | None, password: str) -> bool:
        """Check a password; with no stored hash, spend the same time on a dummy and say no."""
        if stored is None:
            if self._dummy is None:
                self._dummy = await self.hash(secrets.token_urlsafe(16))
            await self._check(self._dummy, password)
            return False
        return await self._check(stored, password)

    async def _check(self, stored: str, password: str) -> bool:
        try:
            return await asyncio.to_thread(self._hasher.verify, stored, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, stored: str) -> bool:
        return self._hasher.check_needs_rehash(stored)
