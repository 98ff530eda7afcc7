"""Who may publish an agent into a scope, and who may manage (version, retire) an existing one."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.agents.models import AgentVersion
from switchboard.agents.schemas import AgentSpec
from switchboard.agents.visibility import audience_of
from switchboard.auth.principal import Principal
from switchboard.errors import Conflict, Forbidden, NotFound
from switchboard.groups import service as groups
from switchboard.metering import service as metering

ROOM_WRITERS = ("owner", "manager", "member")
ROOM_MANAGERS = ("owner", "manager")
MANAGERS_TEXT = "the agent's author, its room's owners and managers, or an Admin"


async def check_scope(session: AsyncSession, principal: Principal, spec: AgentSpec) -> None:
    """The caller may place a spec where it says: 404 for a room or economy they cannot see,
    403 when they see it but may not publish there."""
    if spec.source == "seed" and not principal.is_admin:
        raise Forbidden("source `seed` marks system agents, which only Admins publish")
    if spec.user_id is not None and spec.user_id != str(principal.user_id) and not principal.is_admin:
        raise Forbidden("user_id must be your own user id")
    if spec.working_group_id is not None:
        role = await groups.member_role(session, spec.working_group_id, principal.user_id)
        if role is None:
            raise NotFound("working group not found", details={"field": "working_group_id"})
        if role not in ROOM_WRITERS:
            raise Forbidden("room viewers may not publish agents", details={"field": "working_group_id"})
    if spec.economy_id is not None:
        # Whoever calls the agent bills its economy, so only its participants may name it.
        if not await metering.economy_exists(session, spec.economy_id):
            raise NotFound("economy not found", details={"field": "economy_id"})
        if not await metering.participates(session, principal.user_id, spec.economy_id):
            raise Forbidden("you do not participate in this economy", details={"field": "economy_id"})


async def may_manage(session: AsyncSession, principal: Principal, row: AgentVersion) -> bool:
    """Admins, the row's author or (user tier) owner, and owners/managers of the row's room."""
    if principal.is_admin or (row.author_id is not None and row.author_id == principal.user_id):
        return True
    if row.tier == "user" and row.owner_id == str(principal.user_id):
        return True
    if row.room_id is None:
        return False
    return await groups.member_role(session, row.room_id, principal.user_id) in ROOM_MANAGERS


async def check_new_version(
    session: AsyncSession, principal: Principal, rows: Sequence[AgentVersion], version: str
) -> None:
    """A new version of an existing id may only come from someone who manages that agent; otherwise
    anyone could publish a newer version and take over `agent:<id>` for its users."""
    if any(row.version == version for row in rows):
        raise Conflict(
            "this agent version already exists", details={"id": rows[0].agent_id, "version": version}
        )
    if not rows:
        return
    for row in rows:
        if await may_manage(session, principal, row):
            return
    audience = await audience_of(session, principal)
    if any(audience.sees(row) for row in rows):
        raise Forbidden(f"only {MANAGERS_TEXT} publish new versions of this agent")
    raise Conflict("this agent id is taken", details={"id": rows[0].agent_id})
