"""Who may manage which webhook (SPEC §22): Admins any; an economy's owners that economy's. A webhook
the caller may not manage is answered 404, as if it did not exist."""

from __future__ import annotations

import uuid

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden, NotFound
from switchboard.limits.access import require_writer
from switchboard.metering.service import owned_economy_ids, role_in
from switchboard.webhooks.models import WebhookRow

OWNER = "owner"
# Changing webhooks is management, as changing limits is: never a Viewer; delegation scope `manage`.
__all__ = ["check_create", "managed", "reach_of", "require_writer"]


async def check_create(session: AsyncSession, principal: Principal, economy_id: uuid.UUID | None) -> None:
    if principal.is_admin:
        return
    if economy_id is None:
        raise Forbidden("a webhook for every economy needs an Admin; name your economy (economy_id)")
    role = await role_in(session, economy_id, principal.user_id)
    if role is None:
        raise NotFound("economy not found")
    if role != OWNER:
        raise Forbidden("only the economy's owners (or an Admin) may add its webhooks")


async def managed(session: AsyncSession, principal: Principal, webhook_id: uuid.UUID) -> WebhookRow:
    row = await session.get(WebhookRow, webhook_id)
    if row is None:
        raise NotFound("webhook not found")
    if principal.is_admin:
        return row
    if row.economy_id is None or await role_in(session, row.economy_id, principal.user_id) != OWNER:
        raise NotFound("webhook not found")
    return row


async def reach_of(session: AsyncSession, principal: Principal) -> ColumnElement[bool] | None:
    """The webhooks the caller may manage, as a filter; None for all of them."""
    if principal.is_admin:
        return None
    owned = await owned_economy_ids(session, principal.user_id)
    return WebhookRow.economy_id.in_(sorted(owned))
