"""HTTP routes of webhooks (SPEC §22); each calls one service function."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, status

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page
from switchboard.webhooks import service
from switchboard.webhooks.schemas import DeliveryOut, WebhookCreate, WebhookCreated, WebhookOut, WebhookUpdate

router = APIRouter(prefix="/webhooks", tags=["Webhooks"])


def _setup(request: Request) -> service.Setup:
    setup: service.Setup = request.app.state.webhook_setup
    return setup


Setup = Annotated[service.Setup, Depends(_setup)]
EconomyRef = Annotated[str | None, Query(description="only this economy's webhooks (id or slug)")]
StatusFilter = Annotated[str | None, Query(description="pending, delivered or failed")]


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="createWebhook_Webhooks")
async def create_webhook(
    body: WebhookCreate, principal: CurrentPrincipal, session: DbSession, setup: Setup
) -> WebhookCreated:
    """The answer carries the signing secret; it is never shown again."""
    return await service.create(session, principal, body, setup)


@router.get("", operation_id="listWebhooks_Webhooks")
async def list_webhooks(
    principal: CurrentPrincipal,
    session: DbSession,
    economy_id: EconomyRef = None,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[WebhookOut]:
    return await service.list_webhooks(session, principal, economy_id, cursor, limit)


@router.get("/{webhook_id}", operation_id="getWebhook_Webhooks")
async def get_webhook(webhook_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession) -> WebhookOut:
    return await service.read(session, principal, webhook_id)


@router.patch("/{webhook_id}", operation_id="updateWebhook_Webhooks")
async def update_webhook(
    webhook_id: uuid.UUID, body: WebhookUpdate, principal: CurrentPrincipal, session: DbSession, setup: Setup
) -> WebhookOut:
    """Change `url`, `events` and/or `active`; the whole webhook comes back."""
    return await service.change(session, principal, webhook_id, body, setup)


@router.delete("/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="deleteWebhook_Webhooks")
async def delete_webhook(
    webhook_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession, setup: Setup
) -> Response:
    await service.delete(session, principal, webhook_id, setup)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{webhook_id}/deliveries", operation_id="listWebhookDeliveries_Webhooks")
async def list_deliveries(
    webhook_id: uuid.UUID,
    principal: CurrentPrincipal,
    session: DbSession,
    status: StatusFilter = None,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[DeliveryOut]:
    """The delivery log, newest first: status, attempts, the last error and the receiver's status."""
    return await service.deliveries(session, principal, webhook_id, status, cursor, limit)


@router.post("/{webhook_id}/test", status_code=status.HTTP_202_ACCEPTED, operation_id="testWebhook_Webhooks")
async def test_webhook(
    webhook_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession, setup: Setup
) -> DeliveryOut:
    """Queues a `webhook.test` event for this webhook; follow it in its deliveries."""
    return await service.send_test(session, principal, webhook_id, setup)
