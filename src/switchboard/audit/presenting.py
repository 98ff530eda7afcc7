"""A stored event as the API, the export and the hash see it."""

from __future__ import annotations

from typing import Any

import orjson

from switchboard.audit.events import JsonValue, event_document, rfc3339
from switchboard.audit.models import AuditEventRow


def document_of(row: AuditEventRow) -> dict[str, JsonValue]:
    changes: dict[str, Any] = orjson.loads(row.changes)
    return event_document(
        event_id=str(row.id),
        at=rfc3339(row.at),
        actor={
            "user_id": row.actor_user_id,
            "role": row.actor_role,
            "auth_method": row.actor_auth_method,
            "api_key_id": row.actor_api_key_id,
            "delegation_token_id": row.actor_delegation_token_id,
        },
        action=row.action,
        target_type=row.target_type,
        target_id=row.target_id,
        changes=changes,
        request_id=row.request_id,
        ip=row.ip,
        economy_id=row.economy_id,
        room_id=row.room_id,
    )


def published(row: AuditEventRow) -> dict[str, JsonValue]:
    """The event with its place in the chain."""
    return {**document_of(row), "seq": row.seq, "prev_hash": row.prev_hash, "hash": row.hash}
