"""The one place an audit event is inserted: the chain head is locked, the event hashed and appended.

Every audit event of every kind goes through `append`, inside the transaction of the change it
records, so that anything that must happen with each event (a webhook's outbox row) is one call here.
The head row's UPDATE comes first: it row-locks the head on PostgreSQL (every replica's appends queue
on it, so the chain stays linear) and takes SQLite's write lock before the head is read.
"""

from __future__ import annotations

import uuid
from typing import cast

from sqlalchemy import Connection, Table, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from switchboard.audit.events import Change, Origin, canonical, chain_hash, event_document, rfc3339
from switchboard.audit.models import GENESIS, AuditChainHead, AuditEventRow
from switchboard.audit.origin import origin_of
from switchboard.kit.clock import utcnow
from switchboard.webhooks.events import AUDIT_EVENT
from switchboard.webhooks.outbox import enqueue_on

_HEAD = cast(Table, AuditChainHead.__table__)
_EVENTS = cast(Table, AuditEventRow.__table__)
HEAD_ID = 1


def _advance_head(connection: Connection) -> tuple[int, str]:
    """Lock the head and take the next sequence number; the previous hash comes with it."""
    bumped = connection.execute(update(_HEAD).where(_HEAD.c.id == HEAD_ID).values(seq=_HEAD.c.seq + 1))
    if bumped.rowcount == 0:
        # A database built without the migration's seed row (metadata.create_all): start the chain.
        connection.execute(insert(_HEAD).values(id=HEAD_ID, seq=1, hash=GENESIS))
        return 1, GENESIS
    seq, prev_hash = connection.execute(select(_HEAD.c.seq, _HEAD.c.hash).where(_HEAD.c.id == HEAD_ID)).one()
    return int(seq), str(prev_hash)


def append(connection: Connection, origin: Origin, change: Change) -> str:
    """Append one event in the connection's transaction; returns its id."""
    seq, prev_hash = _advance_head(connection)
    event_id = uuid.uuid4()
    at = utcnow()
    changes = {name: list(pair) for name, pair in sorted(change.changes.items())}
    document = event_document(
        event_id=str(event_id),
        at=rfc3339(at),
        actor=origin.actor.as_json(),
        action=change.action,
        target_type=change.target_type,
        target_id=change.target_id,
        changes=changes,
        request_id=origin.request_id,
        ip=origin.ip,
        economy_id=change.economy_id,
        room_id=change.room_id,
    )
    digest = chain_hash(prev_hash, document)
    actor = origin.actor
    connection.execute(
        insert(_EVENTS).values(
            seq=seq,
            id=event_id,
            at=at,
            actor_user_id=actor.user_id,
            actor_role=actor.role,
            actor_auth_method=actor.auth_method,
            actor_api_key_id=actor.api_key_id,
            actor_delegation_token_id=actor.delegation_token_id,
            action=change.action,
            target_type=change.target_type,
            target_id=change.target_id,
            changes=canonical(changes).decode(),
            request_id=origin.request_id,
            ip=origin.ip,
            economy_id=change.economy_id,
            room_id=change.room_id,
            prev_hash=prev_hash,
            hash=digest,
        )
    )
    connection.execute(update(_HEAD).where(_HEAD.c.id == HEAD_ID).values(hash=digest))
    # SIEMs subscribe to every event (SPEC §22 `audit.event`): queued in the change's transaction too.
    published = {**document, "seq": seq, "prev_hash": prev_hash, "hash": digest}
    economy = uuid.UUID(change.economy_id) if change.economy_id else None
    enqueue_on(connection, AUDIT_EVENT, published, economy)
    return str(event_id)


def append_in(session: Session, change: Change) -> str:
    """`append` on a (sync) session's connection, with the origin the session carries."""
    return append(session.connection(), origin_of(session.info), change)


async def record(session: AsyncSession, change: Change, origin: Origin | None = None) -> str:
    """Record a change made in this session's transaction (for changes the ORM hook cannot see);
    `origin` overrides the session's (a config sync at start says so)."""
    if origin is None:
        return await session.run_sync(append_in, change)
    connection = await session.connection()
    return await connection.run_sync(append, origin, change)
