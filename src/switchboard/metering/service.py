"""What other domains call in metering: economy resolution and membership, agent session counts, prices
and a subject's counted usage (for limits)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.metering.access import OWNER, participating_economy_ids, role_in
from switchboard.metering.economies import Economy, find_economy
from switchboard.metering.models import ParticipantRow, UsageRecordRow
from switchboard.metering.outcome import CallOutcome, CallSink
from switchboard.metering.pricing import Prices, largest_completion_within, worst_case_nanos
from switchboard.metering.resolution import resolve_economy
from switchboard.metering.subject_usage import counted_since

__all__ = [
    "CallOutcome",
    "CallSink",
    "Economy",
    "Prices",
    "counted_since",
    "economy_exists",
    "economy_ids_of",
    "find_economy",
    "largest_completion_within",
    "owned_economy_ids",
    "participates",
    "resolve_economy",
    "role_in",
    "sessions_per_agent",
    "worst_case_nanos",
]


async def sessions_per_agent(session: AsyncSession, agent_ids: Sequence[str]) -> dict[str, int]:
    """Distinct session ids in each agent's usage records (discovery's "sessions participated")."""
    wanted = sorted(set(agent_ids))
    if not wanted:
        return {}
    rows = await session.execute(
        select(UsageRecordRow.agent_id, func.count(func.distinct(UsageRecordRow.session_id)))
        .where(UsageRecordRow.agent_id.in_(wanted), UsageRecordRow.session_id.is_not(None))
        .group_by(UsageRecordRow.agent_id)
    )
    return {str(agent_id): int(count) for agent_id, count in rows.all()}


async def economy_exists(session: AsyncSession, economy_id: uuid.UUID) -> bool:
    return await find_economy(session, str(economy_id)) is not None


async def participates(session: AsyncSession, user_id: uuid.UUID, economy_id: uuid.UUID) -> bool:
    """Named as a user, through one of their rooms, or `default` (everyone's)."""
    return await role_in(session, economy_id, user_id) is not None


async def economy_ids_of(
    session: AsyncSession, user_id: uuid.UUID, rooms: Collection[uuid.UUID]
) -> set[uuid.UUID]:
    """The economies the user participates in, given their rooms (which the caller already holds)."""
    return await participating_economy_ids(session, user_id, rooms)


async def owned_economy_ids(session: AsyncSession, user_id: uuid.UUID) -> set[uuid.UUID]:
    """The economies the user is named an owner of (ownership never comes through a room)."""
    rows = await session.scalars(
        select(ParticipantRow.economy_id).where(
            ParticipantRow.kind == "user",
            ParticipantRow.participant_id == user_id,
            ParticipantRow.role == OWNER,
        )
    )
    return set(rows)
