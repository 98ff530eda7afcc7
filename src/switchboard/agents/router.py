"""HTTP surface of the agents registry (seed operationIds, nested error envelope)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, status

from switchboard.agents import discovery, publishing, registry
from switchboard.agents.schemas import (
    AgentCreated,
    AgentDetail,
    AgentSpec,
    AgentSummary,
    AgentVersionEntry,
    DiscoverRequest,
    DiscoverResult,
    RegistryError,
    ValidationResult,
)
from switchboard.agents.validation import ResolutionRules
from switchboard.auth.dependencies import CurrentPrincipal, WriterPrincipal
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page


def _rules(request: Request) -> ResolutionRules:
    rules: ResolutionRules = request.app.state.agent_rules
    return rules


Rules = Annotated[ResolutionRules, Depends(_rules)]
AgentIdPath = Annotated[str, Path(max_length=200)]
VersionPath = Annotated[str, Path(max_length=200)]


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": RegistryError} for code in (401, *codes)}


router = APIRouter(prefix="/agents", tags=["Agents"])


@router.get("", operation_id="listAgents_Agents", response_model=list[AgentSummary], responses=_errors())
async def list_agents(session: DbSession, principal: CurrentPrincipal) -> list[AgentSummary]:
    """One row per agent the caller sees: its newest non-retired version."""
    return await registry.list_agents(session, principal)


@router.post(
    "",
    operation_id="createAgent_Agents",
    status_code=status.HTTP_201_CREATED,
    responses=_errors(400, 403, 404, 409, 422),
)
async def create_agent(
    spec: AgentSpec, session: DbSession, principal: WriterPrincipal, rules: Rules
) -> AgentCreated:
    """Publish a version; it must resolve (skills, tools, model selector, pinned graphs) to be stored."""
    return await publishing.create_agent(session, principal, spec, rules)


@router.post("/validate", operation_id="validateAgent_Agents", responses=_errors(400, 403, 404, 422))
async def validate_agent(
    spec: AgentSpec, session: DbSession, principal: CurrentPrincipal, rules: Rules
) -> ValidationResult:
    """Resolve a spec without storing it."""
    return await publishing.validate_agent(session, principal, spec, rules)


@router.post("/discover", operation_id="discoverAgents_Agents", responses=_errors(400))
async def discover_agents(
    body: DiscoverRequest, session: DbSession, principal: CurrentPrincipal
) -> DiscoverResult:
    """Free-text match over role, display name, expertise and capabilities, busiest first."""
    return await discovery.discover(session, principal, body)


@router.get("/{agent_id}", operation_id="getAgent_Agents", responses=_errors(404))
async def get_agent(agent_id: AgentIdPath, session: DbSession, principal: CurrentPrincipal) -> AgentDetail:
    """The newest non-retired version's full spec."""
    return await registry.get_agent(session, principal, agent_id)


@router.get("/{agent_id}/versions", operation_id="listAgentVersions_Agents", responses=_errors(400, 404))
async def list_agent_versions(
    agent_id: AgentIdPath,
    session: DbSession,
    principal: CurrentPrincipal,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[AgentVersionEntry]:
    """Every version the caller sees, newest first, retired ones included."""
    return await registry.list_versions(session, principal, agent_id, cursor, limit)


@router.post(
    "/{agent_id}/versions/{version}/retire",
    operation_id="retireAgentVersion_Agents",
    responses=_errors(403, 404),
)
async def retire_agent_version(
    agent_id: AgentIdPath, version: VersionPath, session: DbSession, principal: WriterPrincipal
) -> AgentVersionEntry:
    """Retire one version; reads then resolve to the newest version still active."""
    return await publishing.retire_version(session, principal, agent_id, version)
