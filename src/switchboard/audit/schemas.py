"""Wire shapes of GET /audit."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ActorOut(BaseModel):
    user_id: str | None
    role: str | None
    auth_method: str
    api_key_id: str | None
    delegation_token_id: str | None


class TargetOut(BaseModel):
    type: str
    id: str | None


class ScopeOut(BaseModel):
    economy_id: str | None
    room_id: str | None


class AuditEventOut(BaseModel):
    id: str
    seq: int
    at: str
    actor: ActorOut
    action: str
    target: TargetOut
    # {field: [before, after]}; a secret's values are "rotated".
    changes: dict[str, list[Any]]
    request_id: str | None
    ip: str | None
    scope: ScopeOut
    prev_hash: str
    hash: str
