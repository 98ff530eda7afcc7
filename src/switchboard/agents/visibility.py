"""Who sees which agent version: system tier always, then the caller's own, rooms' and economies' specs."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import ColumnElement, and_, false, or_
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.agents.models import AgentVersion
from switchboard.agents.schemas import AgentSpec
from switchboard.auth.principal import Principal
from switchboard.groups import service as groups
from switchboard.metering import service as metering

Tier = Literal["system", "user", "room", "economy"]


def tier_of(spec: AgentSpec) -> Tier:
    """The narrowest scope a spec names decides who sees it, so a personal agent that bills to a
    shared economy stays personal."""
    if spec.source == "seed":
        return "system"
    if spec.user_id is not None:
        return "user"
    if spec.working_group_id is not None:
        return "room"
    if spec.economy_id is not None:
        return "economy"
    return "user"


def owner_of(spec: AgentSpec, author_id: uuid.UUID | None) -> str | None:
    """The user a user-tier row belongs to: the spec's `user_id`, else its author."""
    if spec.user_id is not None:
        return spec.user_id
    return str(author_id) if author_id is not None else None


@dataclass(frozen=True)
class Audience:
    """The caller as visibility sees them: their id, rooms and economies."""

    user_id: uuid.UUID
    room_ids: frozenset[uuid.UUID]
    economy_ids: frozenset[uuid.UUID]

    def clause(self) -> ColumnElement[bool]:
        """SQL condition selecting the rows this audience may see."""
        return or_(
            AgentVersion.tier == "system",
            and_(AgentVersion.tier == "user", AgentVersion.owner_id == str(self.user_id)),
            and_(AgentVersion.tier == "room", AgentVersion.room_id.in_(self.room_ids))
            if self.room_ids
            else false(),
            and_(AgentVersion.tier == "economy", AgentVersion.economy_id.in_(self.economy_ids))
            if self.economy_ids
            else false(),
        )

    def sees(self, row: AgentVersion) -> bool:
        if row.tier == "system":
            return True
        if row.tier == "user":
            return row.owner_id == str(self.user_id)
        if row.tier == "room":
            return row.room_id in self.room_ids
        return row.tier == "economy" and row.economy_id in self.economy_ids


async def audience_of(session: AsyncSession, principal: Principal) -> Audience:
    """Rooms and economies are read per request (not from the token) so that leaving a room hides its
    agents at once."""
    rooms = frozenset(await groups.room_ids_of(session, principal.user_id))
    economies = frozenset(await metering.economy_ids_of(session, principal.user_id, rooms))
    return Audience(user_id=principal.user_id, room_ids=rooms, economy_ids=economies)
