"""`switchboard audit verify`: walk the chain in order and name the first event that does not fit."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson
from sqlalchemy import Connection, select

from switchboard.audit.chain import HEAD_ID
from switchboard.audit.events import JsonValue, chain_hash
from switchboard.audit.models import GENESIS, AuditChainHead, AuditEventRow
from switchboard.audit.presenting import document_of
from switchboard.audit.retention import PURGE_ACTION

_E = AuditEventRow.__table__


@dataclass(frozen=True)
class Verdict:
    ok: bool
    checked: int
    message: str


def _anchors(rows: Iterable[AuditEventRow]) -> set[str]:
    """The hashes purge events say the kept chain starts after."""
    found: set[str] = set()
    for row in rows:
        if row.action == PURGE_ACTION:
            anchor: JsonValue = orjson.loads(row.changes).get("anchor", [None, None])[1]
            if isinstance(anchor, str):
                found.add(anchor)
    return found


def verify(connection: Connection) -> Verdict:
    rows = [AuditEventRow(**row._mapping) for row in connection.execute(select(_E).order_by(_E.c.seq))]
    head = connection.execute(
        select(AuditChainHead.seq, AuditChainHead.hash).where(AuditChainHead.id == HEAD_ID)
    ).first()
    expected: str | None = None
    previous_seq: int | None = None
    for row in rows:
        label = f"event {row.id} (#{row.seq}, {row.action})"
        if expected is None:
            if row.prev_hash != GENESIS and row.prev_hash not in _anchors(rows):
                return Verdict(
                    False, 0, f"{label}: events before it were removed (no purge event anchors it)"
                )
        elif row.prev_hash != expected or (previous_seq is not None and row.seq != previous_seq + 1):
            return Verdict(False, 0, f"{label}: an event before it was removed or the order was changed")
        if chain_hash(row.prev_hash, document_of(row)) != row.hash:
            return Verdict(False, 0, f"{label}: changed after it was written (its hash does not match)")
        expected, previous_seq = row.hash, row.seq
    if head is not None and rows and (head.seq != rows[-1].seq or head.hash != rows[-1].hash):
        return Verdict(False, 0, f"events after event {rows[-1].id} (#{rows[-1].seq}) were removed")
    if head is not None and not rows and head.seq != 0:
        return Verdict(False, 0, "every event was removed")
    return Verdict(True, len(rows), f"ok: {len(rows)} events, chain intact")
