"""Changing the registry: validate a spec, publish a version, retire a version."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.agents.access import MANAGERS_TEXT, check_new_version, check_scope, may_manage
from switchboard.agents.models import AgentVersion
from switchboard.agents.registry import version_entry_of
from switchboard.agents.schemas import AgentCreated, AgentSpec, AgentVersionEntry, ValidationResult
from switchboard.agents.validation import ResolutionRules, resolve_spec
from switchboard.agents.visibility import audience_of, owner_of, tier_of
from switchboard.auth.principal import Principal
from switchboard.errors import Conflict, Forbidden, NotFound
from switchboard.kit.clock import utcnow


def new_row(spec: AgentSpec, author_id: uuid.UUID | None) -> AgentVersion:
    tier = tier_of(spec)
    return AgentVersion(
        agent_id=spec.id,
        version=spec.version,
        source=spec.source,
        tier=tier,
        owner_id=None if tier == "system" else owner_of(spec, author_id),
        room_id=spec.working_group_id,
        economy_id=spec.economy_id,
        author_id=author_id,
        display_name=spec.display_name,
        role=spec.role,
        created_by=spec.created_by,
        spec=spec.model_dump(mode="json"),
        created_at=utcnow(),
        retired_at=None,
    )


async def validate_agent(
    session: AsyncSession, principal: Principal, spec: AgentSpec, rules: ResolutionRules
) -> ValidationResult:
    """What creating the spec would check, short of storing it or the (id, version) conflict."""
    await check_scope(session, principal, spec)
    return ValidationResult(resolved=resolve_spec(spec, rules))


async def create_agent(
    session: AsyncSession, principal: Principal, spec: AgentSpec, rules: ResolutionRules
) -> AgentCreated:
    await check_scope(session, principal, spec)
    rows = list(await session.scalars(select(AgentVersion).where(AgentVersion.agent_id == spec.id)))
    await check_new_version(session, principal, rows, spec.version)
    resolve_spec(spec, rules)
    if spec.created_by is None:
        spec = spec.model_copy(update={"created_by": str(principal.user_id)})
    session.add(new_row(spec, principal.user_id))
    try:
        await session.flush()
    except IntegrityError:
        # Another request stored the same (id, version) between our read and this insert.
        raise Conflict(
            "this agent version already exists", details={"id": spec.id, "version": spec.version}
        ) from None
    return AgentCreated(id=spec.id, version=spec.version)


async def retire_version(
    session: AsyncSession, principal: Principal, agent_id: str, version: str
) -> AgentVersionEntry:
    """Retiring twice is harmless: the second call answers the already retired version."""
    row = await session.scalar(
        select(AgentVersion)
        .where(AgentVersion.agent_id == agent_id, AgentVersion.version == version)
        .with_for_update()
    )
    audience = await audience_of(session, principal)
    # Admins moderate every agent; anyone else cannot learn that an invisible version exists.
    if row is None or not (principal.is_admin or audience.sees(row)):
        raise NotFound("agent version not found")
    if not await may_manage(session, principal, row):
        raise Forbidden(f"only {MANAGERS_TEXT} retire its versions")
    if row.retired_at is None:
        row.retired_at = utcnow()
        await session.flush()
    return version_entry_of(row)
