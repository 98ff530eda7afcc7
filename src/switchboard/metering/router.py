"""HTTP routes of economies and their participants (SPEC §8); billing reads live in `usage_router`."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response, status

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page
from switchboard.metering import manage
from switchboard.metering.economies import BudgetLimits
from switchboard.metering.schemas import (
    EconomyCreate,
    EconomyOut,
    EconomyUpdate,
    ParticipantIn,
    ParticipantOut,
)
from switchboard.metering.usage_router import router as extra_router

__all__ = ["extra_router", "router"]

UsageFilter = Annotated[
    Literal["readable"] | None,
    Query(description="`readable`: only the economies whose usage the caller may read"),
]


def _budgets(request: Request) -> BudgetLimits:
    budgets: BudgetLimits = request.app.state.economy_budgets  # built in create_app
    return budgets


# An economy's budget is a limit: its changes go through the limits domain's keeper of it.
Budgets = Annotated[BudgetLimits, Depends(_budgets)]

router = APIRouter(prefix="/economies", tags=["Economies & Usage"])


@router.get("", operation_id="listEconomies_Economies")
async def list_economies(
    principal: CurrentPrincipal,
    session: DbSession,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
    usage: UsageFilter = None,
) -> Page[EconomyOut]:
    """The economies the caller participates in (all of them for Admin and `ReadUsage`)."""
    return await manage.list_visible(session, principal, cursor, limit, usage_readable=usage == "readable")


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="createEconomy_Economies")
async def create_economy(
    body: EconomyCreate, principal: CurrentPrincipal, session: DbSession, budgets: Budgets
) -> EconomyOut:
    return await manage.create(session, principal, body, budgets)


@router.get("/{economy}", operation_id="getEconomy_Economies")
async def get_economy(economy: str, principal: CurrentPrincipal, session: DbSession) -> EconomyOut:
    """`economy` is the id or the slug."""
    return await manage.read(session, principal, economy)


@router.patch("/{economy}", operation_id="updateEconomy_Economies")
async def update_economy(
    economy: str,
    body: EconomyUpdate,
    principal: CurrentPrincipal,
    session: DbSession,
    budgets: Budgets,
) -> EconomyOut:
    return await manage.change(session, principal, economy, body, budgets)


@router.delete("/{economy}", status_code=status.HTTP_204_NO_CONTENT, operation_id="deleteEconomy_Economies")
async def delete_economy(
    economy: str, principal: CurrentPrincipal, session: DbSession, budgets: Budgets
) -> Response:
    """Admin: an economy never metered to and named by no room, agent or limit (else 409)."""
    await manage.remove(session, principal, economy, budgets)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{economy}/participants", operation_id="listEconomyParticipants_Economies")
async def list_participants(
    economy: str,
    principal: CurrentPrincipal,
    session: DbSession,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[ParticipantOut]:
    return await manage.participants(session, principal, economy, cursor, limit)


@router.post(
    "/{economy}/participants",
    status_code=status.HTTP_201_CREATED,
    operation_id="addEconomyParticipant_Economies",
)
async def add_participant(
    economy: str, body: ParticipantIn, principal: CurrentPrincipal, session: DbSession, response: Response
) -> ParticipantOut:
    """201 for a new participant; 200 when an existing one's role changed."""
    participant, created = await manage.add_participant(session, principal, economy, body)
    if not created:
        response.status_code = status.HTTP_200_OK
    return participant


@router.delete(
    "/{economy}/participants/{participant_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="removeEconomyParticipant_Economies",
)
async def remove_participant(
    economy: str, participant_id: str, principal: CurrentPrincipal, session: DbSession
) -> Response:
    await manage.drop_participant(session, principal, economy, participant_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
