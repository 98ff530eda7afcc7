"""An audit event, its canonical JSON and its hash: the definitions `audit verify` checks against."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

# A secret's change is shown as this, never as a value (SPEC §22).
ROTATED = "rotated"
JsonValue = str | int | float | bool | None | list[Any] | dict[str, Any]


@dataclass(frozen=True)
class Actor:
    user_id: str | None = None
    role: str | None = None
    auth_method: str = "system"
    api_key_id: str | None = None
    delegation_token_id: str | None = None

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "user_id": self.user_id,
            "role": self.role,
            "auth_method": self.auth_method,
            "api_key_id": self.api_key_id,
            "delegation_token_id": self.delegation_token_id,
        }


CLI = Actor(auth_method="cli")
CONFIG = Actor(auth_method="config")
SYSTEM = Actor(auth_method="system")


@dataclass(frozen=True)
class Origin:
    """Who made a change and from where: the actor, the request id and the client's address."""

    actor: Actor = SYSTEM
    request_id: str | None = None
    ip: str | None = None


FROM_CONFIG = Origin(actor=CONFIG)


@dataclass(frozen=True)
class Change:
    """What a caller asks `record` to append; the chain adds id, time, origin and hashes."""

    action: str
    target_type: str
    target_id: str | None
    changes: dict[str, list[JsonValue]] = field(default_factory=dict)
    economy_id: str | None = None
    room_id: str | None = None


def json_value(value: object) -> JsonValue:
    """A column value as JSON: ids and times as text, so the stored event reads back identical."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, datetime):
        return rfc3339(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical(document: object) -> bytes:
    """Sorted keys, no whitespace, UTF-8 (not \\u escapes), as docs/audit.md defines it."""
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)


def event_document(
    *,
    event_id: str,
    at: str,
    actor: dict[str, JsonValue],
    action: str,
    target_type: str,
    target_id: str | None,
    changes: dict[str, Any],
    request_id: str | None,
    ip: str | None,
    economy_id: str | None,
    room_id: str | None,
) -> dict[str, JsonValue]:
    """The event as the API shows it and the hash covers (without `prev_hash` and `hash`)."""
    return {
        "id": event_id,
        "at": at,
        "actor": actor,
        "action": action,
        "target": {"type": target_type, "id": target_id},
        "changes": changes,
        "request_id": request_id,
        "ip": ip,
        "scope": {"economy_id": economy_id, "room_id": room_id},
    }


def chain_hash(prev_hash: str, document: object) -> str:
    """SHA-256 over the previous hash (64 hex digits, ASCII) followed by the canonical JSON."""
    return hashlib.sha256(prev_hash.encode("ascii") + canonical(document)).hexdigest()


def diff(
    before: Mapping[str, object], after: Mapping[str, object], secrets: frozenset[str] = frozenset()
) -> dict[str, list[JsonValue]]:
    """{field: [before, after]} for the fields `after` sets to something else; secrets as "rotated"."""
    changes: dict[str, list[JsonValue]] = {}
    for name, value in after.items():
        old = before.get(name)
        if name in secrets:
            changes[name] = [ROTATED, ROTATED]
        elif old != value:
            changes[name] = [json_value(old), json_value(value)]
    return changes
