"""AES-256-GCM keyring: random nonces, the key id inside every sealed value, caller-bound associated data."""

from __future__ import annotations

import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

# Sealed value: VERSION | len(kid) | kid | nonce | ciphertext+tag. The header is authenticated too,
# so editing the key id (or the version) makes decryption fail instead of picking another key.
VERSION = 1
NONCE_BYTES = 12
KEY_BYTES = 32
MAX_KID_BYTES = 64


class CryptoError(Exception):
    """A sealed value cannot be opened: unknown key id, wrong row, tampered or truncated bytes."""


def _header(kid: str) -> bytes:
    raw = kid.encode("ascii")
    return bytes((VERSION, len(raw))) + raw


def key_id_of(sealed: bytes) -> str:
    """The id of the key a value was sealed under (no key needed; the id is not secret)."""
    if len(sealed) < 2 or sealed[0] != VERSION:
        raise CryptoError("not a sealed value of a known version")
    end = 2 + sealed[1]
    if len(sealed) < end + NONCE_BYTES + 16:
        raise CryptoError("sealed value is truncated")
    try:
        return sealed[2:end].decode("ascii")
    except UnicodeDecodeError:
        raise CryptoError("sealed value has a malformed key id") from None


class Keyring:
    """Named AES-256 keys; the first one seals, every one of them opens."""

    __slots__ = ("_active", "_ciphers")

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        if not keys:
            raise ValueError("a keyring needs at least one key")
        ciphers: dict[str, AESGCM] = {}
        for kid, key in keys:
            if not kid or not kid.isascii() or len(kid) > MAX_KID_BYTES:
                raise ValueError("a key id is 1 to 64 ASCII characters")
            if len(key) != KEY_BYTES:
                raise ValueError(f"key {kid!r} must be {KEY_BYTES} bytes (AES-256)")
            if kid in ciphers:
                raise ValueError(f"key id {kid!r} appears twice")
            ciphers[kid] = AESGCM(key)
        self._ciphers = ciphers
        self._active = keys[0][0]

    @property
    def active_kid(self) -> str:
        return self._active

    def seal(self, plaintext: bytes, associated: bytes) -> bytes:
        """Encrypt under the active key; `associated` must be given again, identical, to open."""
        header = _header(self._active)
        nonce = os.urandom(NONCE_BYTES)
        return header + nonce + self._ciphers[self._active].encrypt(nonce, plaintext, header + associated)

    def open(self, sealed: bytes, associated: bytes) -> bytes:
        kid = key_id_of(sealed)
        cipher = self._ciphers.get(kid)
        if cipher is None:
            raise CryptoError(f"sealed under key {kid!r}, which is not configured")
        start = 2 + len(kid)
        nonce = sealed[start : start + NONCE_BYTES]
        try:
            return cipher.decrypt(nonce, sealed[start + NONCE_BYTES :], sealed[:start] + associated)
        except InvalidTag:
            raise CryptoError("sealed value does not authenticate (wrong row, key or bytes)") from None

    def reseal(self, sealed: bytes, associated: bytes) -> bytes:
        """Re-encrypt under the active key without handing the plaintext to the caller (rotation)."""
        return self.seal(self.open(sealed, associated), associated)
