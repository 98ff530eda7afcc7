"""HTTP routes of spend and rate limits (SPEC §13); each calls one service function."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response, status

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page
from switchboard.limits import service
from switchboard.limits.schemas import LimitCreate, LimitOut, LimitStatusOut, LimitUpdate, MyLimitOut

router = APIRouter(tags=["Limits"])


def _registry(request: Request) -> Any:
    # Absent until the enforcement side starts it (and in apps built without it).
    return getattr(request.app.state, "limits", None)


# What service.py tells (limits/notify.py) once a change commits.
LimitRegistry = Annotated[Any, Depends(_registry)]

# openapi_errors declares 409 on writes with a body; DELETE of a config or budget limit answers it too.
_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {
        "description": "The limit is managed by the config file or an economy's budget",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FlatError"}}},
    }
}
SubjectType = Annotated[str | None, Query(description="economy, user, room, agent or api_key")]
SubjectId = Annotated[str | None, Query(description="needs subject_type; an economy by id or slug")]
EconomyRef = Annotated[str | None, Query(description="limits narrowed to this economy (id or slug)")]


@router.post("/limits", status_code=status.HTTP_201_CREATED, operation_id="createLimit_Limits")
async def create_limit(
    body: LimitCreate, principal: CurrentPrincipal, session: DbSession, registry: LimitRegistry
) -> LimitOut:
    return await service.create(session, principal, body, registry)


@router.get("/limits", operation_id="listLimits_Limits")
async def list_limits(
    principal: CurrentPrincipal,
    session: DbSession,
    subject_type: SubjectType = None,
    subject_id: SubjectId = None,
    economy_id: EconomyRef = None,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[LimitOut]:
    """The limits the caller may manage, oldest first."""
    return await service.list_limits(session, principal, subject_type, subject_id, economy_id, cursor, limit)


@router.get("/limits/{limit_id}", operation_id="getLimit_Limits")
async def get_limit(limit_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession) -> LimitOut:
    return await service.read(session, principal, limit_id)


@router.patch("/limits/{limit_id}", operation_id="updateLimit_Limits")
async def update_limit(
    limit_id: uuid.UUID,
    body: LimitUpdate,
    principal: CurrentPrincipal,
    session: DbSession,
    registry: LimitRegistry,
) -> LimitOut:
    """Change `amount` and/or `allow_unpriced`; the whole limit comes back."""
    return await service.change(session, principal, limit_id, body, registry)


@router.delete(
    "/limits/{limit_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="deleteLimit_Limits",
    responses=_CONFLICT,
)
async def delete_limit(
    limit_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession, registry: LimitRegistry
) -> Response:
    await service.delete(session, principal, limit_id, registry)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/limits/{limit_id}/status", operation_id="getLimitStatus_Limits")
async def limit_status(
    limit_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession
) -> LimitStatusOut:
    """What the limit has counted in its current window, what running calls hold, and what is left."""
    return await service.status(session, principal, limit_id)


@router.get("/usage/me/limits", operation_id="listMyLimits_Limits")
async def my_limits(
    principal: CurrentPrincipal,
    session: DbSession,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[MyLimitOut]:
    """Limits on you and on the economies you take part in, each with its status."""
    return await service.mine(session, principal, cursor, limit)
