"""HTTP route of the audit trail: GET /audit (read only; no route edits or deletes an event)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from switchboard.audit import service
from switchboard.audit.schemas import AuditEventOut
from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page

router = APIRouter(tags=["Audit"])

From = Annotated[str | None, Query(alias="from", description="RFC 3339 timestamp or date; inclusive")]
To = Annotated[str | None, Query(description="RFC 3339 timestamp (exclusive) or date (inclusive)")]
Text = Annotated[str | None, Query(max_length=200)]


@router.get("/audit", operation_id="listAuditEvents_Audit")
async def list_audit_events(
    principal: CurrentPrincipal,
    session: DbSession,
    from_: From = None,
    to: To = None,
    actor: Annotated[str | None, Query(description="the acting user's id")] = None,
    action: Annotated[str | None, Query(description="e.g. credential.rotate")] = None,
    target_type: Text = None,
    target_id: Text = None,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[AuditEventOut]:
    """Newest first. Admin: every event; an economy's owners: its events; a room's owners and
    managers: the room's."""
    filters = service.Filters.parse(from_, to, actor, action, target_type, target_id)
    data, next_cursor = await service.page(session, principal, filters, cursor, limit)
    return Page[AuditEventOut](data=[AuditEventOut.model_validate(d) for d in data], next_cursor=next_cursor)
