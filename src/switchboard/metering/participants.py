"""An economy's participants: users (owner or member) and rooms (members)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.errors import Conflict, NotFound
from switchboard.kit.clock import utcnow
from switchboard.metering.models import ParticipantRow


@dataclass(frozen=True)
class Participant:
    economy_id: uuid.UUID
    kind: str  # "user" | "room"
    participant_id: uuid.UUID
    role: str
    created_at: datetime


def _participant(row: ParticipantRow) -> Participant:
    return Participant(row.economy_id, row.kind, row.participant_id, row.role, row.created_at)


async def list_participants(
    session: AsyncSession, economy_id: uuid.UUID, after: uuid.UUID | None, limit: int
) -> list[Participant]:
    query = (
        select(ParticipantRow)
        .where(ParticipantRow.economy_id == economy_id)
        .order_by(ParticipantRow.participant_id)
        .limit(limit)
    )
    if after is not None:
        query = query.where(ParticipantRow.participant_id > after)
    return [_participant(row) for row in await session.scalars(query)]


async def put_participant(
    session: AsyncSession, economy_id: uuid.UUID, kind: str, participant_id: uuid.UUID, role: str
) -> tuple[Participant, bool]:
    """Add a participant or change its role; True when it is new."""
    row = await session.get(ParticipantRow, (economy_id, participant_id))
    if row is not None:
        if row.kind != kind:
            # Ids are UUIDs of different namespaces; a collision is a caller's mistake, not a merge.
            raise Conflict(f"{participant_id} is already a {row.kind} participant")
        row.role = role
        await session.flush()
        return _participant(row), False
    row = ParticipantRow(
        economy_id=economy_id, participant_id=participant_id, kind=kind, role=role, created_at=utcnow()
    )
    session.add(row)
    try:
        await session.flush()
    except IntegrityError:
        raise Conflict("the participant was added concurrently; retry") from None
    return _participant(row), True


async def remove_participant(session: AsyncSession, economy_id: uuid.UUID, participant_id: uuid.UUID) -> None:
    row = await session.get(ParticipantRow, (economy_id, participant_id))
    if row is None:
        raise NotFound("no such participant")
    await session.delete(row)  # through the ORM, so the audit trail records it
    await session.flush()
