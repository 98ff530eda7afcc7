"""What a credential's ciphertext is bound to, so that a ciphertext moved to another row fails to open."""

from __future__ import annotations

import uuid

import orjson

# Changing this string invalidates every stored credential; bump it only with a migration.
_PURPOSE = "switchboard/llm-credential/v1"
HINT_CHARS = 4
# Below this length the last four characters would give away too much of the secret.
MIN_LENGTH_FOR_HINT = 8


def associated_data(credential_id: uuid.UUID, scope: str, owner_id: uuid.UUID, provider: str) -> bytes:
    # A JSON array cannot be confused with another split of the same characters.
    return orjson.dumps([_PURPOSE, str(credential_id), scope, str(owner_id), provider])


def hint_of(secret: str) -> str:
    """The last four characters, or nothing for a secret so short that they would reveal most of it."""
    return secret[-HINT_CHARS:] if len(secret) >= MIN_LENGTH_FOR_HINT else ""
