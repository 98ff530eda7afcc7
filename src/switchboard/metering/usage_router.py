"""HTTP routes of the billing reads: an economy's records, summary and export, and `/usage/me`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page
from switchboard.metering import billing
from switchboard.metering.export import ExportFormat
from switchboard.metering.schemas import GroupBy, SummaryOut, UsageRecordOut

router = APIRouter(tags=["Economies & Usage"])

From = Annotated[str | None, Query(alias="from", description="RFC 3339 timestamp or date; inclusive")]
To = Annotated[str | None, Query(description="RFC 3339 timestamp (exclusive) or date (inclusive)")]


@router.get("/economies/{economy}/usage", operation_id="listEconomyUsage_Economies")
async def economy_usage(
    economy: str,
    principal: CurrentPrincipal,
    session: DbSession,
    from_: From = None,
    to: To = None,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[UsageRecordOut]:
    """Usage records in (occurred_at, id) order. Admin, the economy's owners, or `ReadUsage`."""
    return await billing.economy_usage(session, principal, economy, from_, to, cursor, limit)


@router.get("/economies/{economy}/usage/summary", operation_id="summarizeEconomyUsage_Economies")
async def economy_summary(
    economy: str,
    principal: CurrentPrincipal,
    session: DbSession,
    group_by: Annotated[GroupBy, Query()],
    from_: From = None,
    to: To = None,
) -> SummaryOut:
    return await billing.economy_summary(session, principal, economy, from_, to, group_by)


@router.get(
    "/economies/{economy}/usage/export",
    operation_id="exportEconomyUsage_Economies",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {}, "application/x-ndjson": {}}}},
)
async def economy_export(
    economy: str,
    request: Request,
    principal: CurrentPrincipal,
    session: DbSession,
    format: Annotated[ExportFormat, Query()] = "csv",
    from_: From = None,
    to: To = None,
) -> StreamingResponse:
    export = await billing.economy_export(
        session, request.app.state.sessionmaker, principal, economy, from_, to, format
    )
    return StreamingResponse(
        export.chunks,
        media_type=export.media_type,
        headers={"content-disposition": f'attachment; filename="{export.filename}"'},
    )


@router.get("/usage/me", operation_id="listMyUsage_Economies")
async def my_usage(
    principal: CurrentPrincipal,
    session: DbSession,
    from_: From = None,
    to: To = None,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[UsageRecordOut]:
    """The caller's own usage records, across economies."""
    return await billing.my_usage(session, principal, from_, to, cursor, limit)
