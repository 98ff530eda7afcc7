"""Audit events for changes made through the ORM, found at flush time so that no service can forget.

A session's `after_flush` still holds the flush's new, changed and deleted objects with their
attribute history; for each object of an audited table it appends one event (chain.append) on the
flush's own connection, so the event commits or rolls back with the change. Changes made with core
statements (bulk updates, config sync) call `chain.record` themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, inspect
from sqlalchemy.orm import Session, UOWTransaction

from switchboard.agents.models import AgentVersion
from switchboard.audit.chain import append_in
from switchboard.audit.events import ROTATED, Change, JsonValue, Origin, json_value
from switchboard.audit.origin import DEFAULT
from switchboard.auth.models import ApiKey, DelegationToken, User
from switchboard.credentials.models import LlmCredential
from switchboard.groups.models import Room, RoomMember
from switchboard.limits.models import LimitRow
from switchboard.metering.models import EconomyRow, ParticipantRow
from switchboard.webhooks.models import WebhookRow

# Bookkeeping columns every table has; a change to them alone is no change anyone audits.
_BOOKKEEPING = frozenset({"created_at", "updated_at", "last_used_at"})


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def limit_room(row: Any) -> object:
    return row.subject_id if row.subject_type == "room" else None


@dataclass(frozen=True)
class Audited:
    target_type: str
    target_id: Callable[[Any], str | None]
    secrets: frozenset[str] = frozenset()
    economy: Callable[[Any], object] = lambda row: None
    room: Callable[[Any], object] = lambda row: None
    # Column set from empty to a value → this verb instead of "update" (revoked_at → "revoke").
    verbs: dict[str, str] = field(default_factory=dict)


AUDITED: dict[type, Audited] = {
    LlmCredential: Audited(
        "credential", lambda r: _text(r.id), frozenset({"sealed_secret"}), room=lambda r: r.room_id
    ),
    Room: Audited("room", lambda r: _text(r.id), room=lambda r: r.id),
    RoomMember: Audited("room_member", lambda r: f"{r.room_id}/{r.user_id}", room=lambda r: r.room_id),
    ApiKey: Audited(
        "api_key", lambda r: _text(r.id), frozenset({"key_hash"}), verbs={"revoked_at": "revoke"}
    ),
    DelegationToken: Audited(
        "delegation_token", lambda r: _text(r.id), room=lambda r: r.room_id, verbs={"revoked_at": "revoke"}
    ),
    User: Audited("user", lambda r: _text(r.id), frozenset({"password_hash"})),
    AgentVersion: Audited(
        "agent",
        lambda r: f"{r.agent_id}@{r.version}",
        economy=lambda r: r.economy_id,
        room=lambda r: r.room_id,
        verbs={"retired_at": "retire"},
    ),
    LimitRow: Audited("limit", lambda r: _text(r.id), economy=lambda r: r.economy_id, room=limit_room),
    EconomyRow: Audited("economy", lambda r: _text(r.id), economy=lambda r: r.id),
    ParticipantRow: Audited(
        "economy_participant", lambda r: f"{r.economy_id}/{r.participant_id}", economy=lambda r: r.economy_id
    ),
    WebhookRow: Audited(
        "webhook", lambda r: _text(r.id), frozenset({"sealed_secret"}), economy=lambda r: r.economy_id
    ),
}


def _columns(row: object) -> list[str]:
    return [attr.key for attr in inspect(row).mapper.column_attrs]


def _shown(spec: Audited, name: str, value: object) -> JsonValue:
    if name in spec.secrets:
        return None if value is None else ROTATED
    return json_value(value)


def _created(spec: Audited, row: object) -> dict[str, list[JsonValue]]:
    return {
        name: [None, _shown(spec, name, getattr(row, name))]
        for name in _columns(row)
        if name not in _BOOKKEEPING and getattr(row, name) is not None
    }


def _deleted(spec: Audited, row: object) -> dict[str, list[JsonValue]]:
    state = inspect(row)
    loaded = state.dict
    return {
        name: [_shown(spec, name, loaded[name]), None]
        for name in _columns(row)
        if name not in _BOOKKEEPING and loaded.get(name) is not None
    }


def _updated(spec: Audited, row: object) -> dict[str, list[JsonValue]]:
    changes: dict[str, list[JsonValue]] = {}
    state = inspect(row)
    for name in _columns(row):
        if name in _BOOKKEEPING:
            continue
        history = state.attrs[name].history
        if not history.added and not history.deleted:
            continue
        before = history.deleted[0] if history.deleted else None
        after = history.added[0] if history.added else None
        if name in spec.secrets:
            changes[name] = [ROTATED, ROTATED]  # a new secret: neither value is shown
        elif before != after:
            changes[name] = [json_value(before), json_value(after)]
    return changes


def _verb(spec: Audited, changes: dict[str, list[JsonValue]]) -> str:
    for column, verb in spec.verbs.items():
        pair = changes.get(column)
        if pair is not None and pair[0] is None and pair[1] is not None:
            return verb
    if spec.secrets & changes.keys():
        return "rotate"
    return "update"


def changes_of(session: Session) -> list[Change]:
    """One change per audited object this flush creates, changes or deletes."""
    found: list[Change] = []
    batches = (("create", session.new), ("update", session.dirty), ("delete", session.deleted))
    for kind, rows in batches:
        for row in rows:
            spec = AUDITED.get(type(row))
            if spec is None:
                continue
            if kind == "create":
                changes, verb = _created(spec, row), "create"
            elif kind == "delete":
                changes, verb = _deleted(spec, row), "delete"
            else:
                changes = _updated(spec, row)
                if not changes:
                    continue
                verb = _verb(spec, changes)
            found.append(
                Change(
                    action=f"{spec.target_type}.{verb}",
                    target_type=spec.target_type,
                    target_id=spec.target_id(row),
                    changes=changes,
                    economy_id=_text(spec.economy(row)),
                    room_id=_text(spec.room(row)),
                )
            )
    return found


def _after_flush(session: Session, flush_context: UOWTransaction) -> None:
    for change in changes_of(session):
        append_in(session, change)


def install(default: Origin | None = None) -> None:
    """Hook every ORM session of the process (idempotent; the audit lifecycle and the CLI call it);
    `default` is who changes things in sessions that serve no request (the CLI)."""
    if default is not None:
        DEFAULT.set(default)
    if not event.contains(Session, "after_flush", _after_flush):
        event.listen(Session, "after_flush", _after_flush)
