"""Reading the registry: list, single agent, and its versions, each as the caller may see them."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.agents.models import AgentVersion
from switchboard.agents.schemas import AgentDetail, AgentSummary, AgentVersionEntry
from switchboard.agents.visibility import Audience, audience_of
from switchboard.auth.principal import Principal
from switchboard.errors import NotFound, ValidationFailed
from switchboard.kit.pagination import Page, check_limit, decode_cursor, encode_cursor


def summary_of(row: AgentVersion) -> AgentSummary:
    return AgentSummary(
        id=row.agent_id,
        version=row.version,
        display_name=row.display_name,
        role=row.role,
        source=row.source,  # type: ignore[arg-type]
        created_by=row.created_by,
        working_group_id=row.room_id,
    )


def version_entry_of(row: AgentVersion) -> AgentVersionEntry:
    return AgentVersionEntry(
        **summary_of(row).model_dump(),
        created_at=row.created_at,
        retired=row.retired,
        retired_at=row.retired_at,
    )


def detail_of(row: AgentVersion) -> AgentDetail:
    return AgentDetail.model_validate({**row.spec, "created_at": row.created_at})


async def newest_active(session: AsyncSession, audience: Audience) -> list[AgentVersion]:
    """For each agent, the most recently created non-retired version the audience sees (one query)."""
    newest = (
        select(func.max(AgentVersion.row_id))
        .where(audience.clause(), AgentVersion.retired_at.is_(None))
        .group_by(AgentVersion.agent_id)
    )
    result = await session.scalars(
        select(AgentVersion).where(AgentVersion.row_id.in_(newest)).order_by(AgentVersion.agent_id)
    )
    return list(result)


async def newest_active_of(session: AsyncSession, audience: Audience, agent_id: str) -> AgentVersion | None:
    return await session.scalar(
        select(AgentVersion)
        .where(AgentVersion.agent_id == agent_id, AgentVersion.retired_at.is_(None), audience.clause())
        .order_by(AgentVersion.row_id.desc())
        .limit(1)
    )


async def list_agents(session: AsyncSession, principal: Principal) -> list[AgentSummary]:
    audience = await audience_of(session, principal)
    return [summary_of(row) for row in await newest_active(session, audience)]


async def get_agent(session: AsyncSession, principal: Principal, agent_id: str) -> AgentDetail:
    row = await newest_active_of(session, await audience_of(session, principal), agent_id)
    if row is None:
        raise NotFound("agent not found")
    return detail_of(row)


async def list_versions(
    session: AsyncSession, principal: Principal, agent_id: str, cursor: str | None, limit: int
) -> Page[AgentVersionEntry]:
    """Every version the caller sees, retired ones included, newest first."""
    check_limit(limit)
    after = decode_cursor(cursor)
    audience = await audience_of(session, principal)
    query = select(AgentVersion).where(AgentVersion.agent_id == agent_id, audience.clause())
    if after is not None:
        if len(after) != 1 or not isinstance(after[0], int):
            raise ValidationFailed("cursor is not valid", param="cursor")
        query = query.where(AgentVersion.row_id < after[0])
    rows = list(await session.scalars(query.order_by(AgentVersion.row_id.desc()).limit(limit + 1)))
    if not rows and after is None:
        raise NotFound("agent not found")
    more = len(rows) > limit
    rows = rows[:limit]
    return Page[AgentVersionEntry](
        data=[version_entry_of(row) for row in rows],
        next_cursor=encode_cursor([rows[-1].row_id]) if more else None,
    )


async def agent_exists(session: AsyncSession, agent_id: str) -> bool:
    """Any version, retired or not, whoever may see it (limits name agents by id, SPEC §13)."""
    found = await session.scalar(
        select(AgentVersion.row_id).where(AgentVersion.agent_id == agent_id).limit(1)
    )
    return found is not None
