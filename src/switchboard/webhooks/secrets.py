"""Signing secrets: made here, sealed with the credential keyring, opened in exactly one function."""

from __future__ import annotations

import base64
import os
import uuid

import orjson

from switchboard.kit.crypto import Keyring
from switchboard.kit.secret import Secret

# Changing this string invalidates every stored webhook secret; bump it only with a migration.
_PURPOSE = "switchboard/webhook-secret/v1"
PREFIX = "whsec_"
SECRET_BYTES = 32  # HMAC-SHA256's block-sized key is 64; Standard Webhooks asks for 24 to 64


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and the base64 of random bytes."""
    return PREFIX + base64.b64encode(os.urandom(SECRET_BYTES)).decode()


def _associated(webhook_id: uuid.UUID) -> bytes:
    return orjson.dumps([_PURPOSE, str(webhook_id)])


def seal(keyring: Keyring, webhook_id: uuid.UUID, secret: str) -> bytes:
    return keyring.seal(secret.encode(), _associated(webhook_id))


def open_secret(keyring: Keyring, webhook_id: uuid.UUID, sealed: bytes) -> Secret:
    """The one place a stored signing secret is decrypted: to sign a delivery."""
    return Secret(keyring.open(sealed, _associated(webhook_id)).decode())


def reseal(keyring: Keyring, webhook_id: uuid.UUID, sealed: bytes) -> bytes:
    """Under the active key, the plaintext never handed out (`switchboard keys rotate`)."""
    return keyring.reseal(sealed, _associated(webhook_id))
