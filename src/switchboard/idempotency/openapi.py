"""Declares the Idempotency-Key header on every POST the gateway replays, in the OpenAPI document."""

from __future__ import annotations

from typing import Any

from switchboard.idempotency.middleware import SELF_HANDLED_PREFIXES
from switchboard.idempotency.service import MAX_KEY_LENGTH

# /auth answers carry tokens and one-time keys, which are never stored, so they are never replayed.
NOT_REPLAYED_PREFIXES = tuple(prefix for prefix in SELF_HANDLED_PREFIXES if prefix != "/v1/")
NOT_REPLAYED_PATHS = frozenset({"/mcp"})  # a discovery challenge, not an operation

PARAMETER: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Optional. The same key with the same body returns the stored response without running the "
        "request again (header `idempotent-replayed: true`; on /v1 a stream is replayed as the same "
        "events); the same key with another body is 400 IDEMPOTENCY_CONFLICT; while "
        "the first request still runs, 409 CONFLICT. Keys are scoped to the caller and kept 24 hours by "
        "default. A failed (5xx, 408, 429) or cancelled request frees its key."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": "^[!-~]+$"},
}


def replays(path: str) -> bool:
    return path not in NOT_REPLAYED_PATHS and not path.startswith(NOT_REPLAYED_PREFIXES)


def declare_idempotency_key(document: dict[str, Any]) -> dict[str, Any]:
    """Adds the header to each replayed POST operation of `document` (in place; returned for chaining)."""
    for path, item in document.get("paths", {}).items():
        operation = item.get("post")
        if operation is None or not replays(path):
            continue
        parameters = operation.setdefault("parameters", [])
        if not any(
            p.get("in") == "header" and p.get("name", "").lower() == "idempotency-key" for p in parameters
        ):
            parameters.append(dict(PARAMETER))
    return document
