"""The /limits use cases: create, list, read, change, delete, status, and the caller's own limits."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.errors import Conflict, ValidationFailed
from switchboard.groups.service import room_ids_of
from switchboard.kit.pagination import Page, check_limit, encode_cursor, time_id_cursor
from switchboard.limits import access, notify, store
from switchboard.limits.authority import level_of, require_authority
from switchboard.limits.ledger import status_of
from switchboard.limits.models import LimitRow
from switchboard.limits.rules import SUBJECT_TYPES
from switchboard.limits.schemas import LimitCreate, LimitOut, LimitStatusOut, LimitUpdate, MyLimitOut
from switchboard.limits.store import LimitKey
from switchboard.limits.subjects import economy_named, require_subject, subject_form
from switchboard.metering.service import economy_ids_of


def limit_out(row: LimitRow) -> LimitOut:
    return LimitOut(
        id=row.id,
        subject_type=row.subject_type,  # type: ignore[arg-type]
        subject_id=row.subject_id,
        economy_id=row.economy_id,
        metric=row.metric,  # type: ignore[arg-type]
        window=row.window,  # type: ignore[arg-type]
        amount=row.amount,
        allow_unpriced=row.allow_unpriced,
        managed_by=row.managed_by,  # type: ignore[arg-type]
        created_by=row.created_by,
        authority=row.authority,  # type: ignore[arg-type]
        created_at=row.created_at,
    )


async def status_out(session: AsyncSession, row: LimitRow) -> LimitStatusOut:
    status = await status_of(await session.connection(), store.to_limit(row))
    return LimitStatusOut(
        used=str(status.used),
        reserved=str(status.reserved),
        remaining=str(status.remaining),
        resets_at=status.resets_at,
    )


def refuse_foreign(row: LimitRow) -> None:
    """Config and budget limits have their source of truth elsewhere; the API would be overwritten."""
    if row.managed_by == store.MANAGED_BY_CONFIG:
        raise Conflict(f"limit {row.id} is declared in the config file (limits:); change it there")
    if row.managed_by == store.MANAGED_BY_BUDGET:
        raise Conflict(
            f"limit {row.id} is the budget of economy {row.subject_id}; change the economy's budget"
            " (PATCH /economies/{id}, or the config file for a config economy)"
        )


async def key_from(session: AsyncSession, body: LimitCreate) -> LimitKey:
    """The limit's key in stored form: ids canonical, economies by id. 400/404 on the way."""
    if body.subject_type == "economy" and body.economy_id is not None:
        raise ValidationFailed(
            "economy_id: narrows a user, room, agent or API key limit, not an economy's",
            param="economy_id",
        )
    subject_id = subject_form(body.subject_type, body.subject_id)
    if body.subject_type == "economy":
        subject_id = str((await economy_named(session, subject_id)).id)
    economy_id = (await economy_named(session, body.economy_id)).id if body.economy_id is not None else None
    return LimitKey(body.subject_type, subject_id, economy_id, body.metric, body.window)


async def create(session: AsyncSession, principal: Principal, body: LimitCreate, registry: Any) -> LimitOut:
    access.require_writer(principal)
    key = await key_from(session, body)
    await access.check_create(session, principal, key)
    # After the permission check: whether a user or an API key exists is not everyone's business.
    await require_subject(session, key.subject_type, key.subject_id)
    existing = await store.same_key(session, key)
    if existing is not None:
        raise Conflict(
            f"limit {existing.id} already counts this subject, metric, window and economy; change it"
        )
    amount = int(body.amount)
    new = store.new_row(
        key,
        amount,
        allow_unpriced=body.allow_unpriced,
        created_by=principal.user_id,
        authority=level_of(principal),
    )
    row = await store.add(session, new)
    notify.on_commit(session, registry)
    return limit_out(row)


def _next_cursor(rows: list[LimitRow], limit: int) -> str | None:
    if len(rows) <= limit or not rows:
        return None
    last = rows[limit - 1]
    return encode_cursor([last.created_at.isoformat(), str(last.id)])


async def list_limits(
    session: AsyncSession,
    principal: Principal,
    subject_type: str | None,
    subject_id: str | None,
    economy_ref: str | None,
    cursor: str | None,
    limit: int,
) -> Page[LimitOut]:
    """The limits the caller may manage, narrowed by the filters given."""
    check_limit(limit)
    after = time_id_cursor(cursor)
    if subject_type is not None and subject_type not in SUBJECT_TYPES:
        raise ValidationFailed(
            f"subject_type must be one of {', '.join(SUBJECT_TYPES)}", param="subject_type"
        )
    if subject_id is not None and subject_type is None:
        raise ValidationFailed("subject_id needs subject_type", param="subject_id")
    if subject_type is not None and subject_id is not None:
        subject_id = subject_form(subject_type, subject_id)
        if subject_type == "economy":
            subject_id = str((await economy_named(session, subject_id)).id)
    economy_id = (await economy_named(session, economy_ref)).id if economy_ref is not None else None
    where = store.Filter(subject_type, subject_id, economy_id, await access.reach_of(session, principal))
    rows = await store.page(session, where, after, limit + 1)
    return Page[LimitOut](
        data=[limit_out(row) for row in rows[:limit]], next_cursor=_next_cursor(rows, limit)
    )


async def read(session: AsyncSession, principal: Principal, limit_id: uuid.UUID) -> LimitOut:
    return limit_out(await access.managed(session, principal, limit_id))


async def change(
    session: AsyncSession, principal: Principal, limit_id: uuid.UUID, body: LimitUpdate, registry: Any
) -> LimitOut:
    access.require_writer(principal)
    row = await access.managed(session, principal, limit_id)
    refuse_foreign(row)
    level = require_authority(principal, row)
    if body.model_fields_set:
        amount = int(body.amount) if body.amount is not None else None
        row = await store.change(
            session, row, amount=amount, allow_unpriced=body.allow_unpriced, authority=level
        )
        notify.on_commit(session, registry)
    return limit_out(row)


async def delete(session: AsyncSession, principal: Principal, limit_id: uuid.UUID, registry: Any) -> None:
    access.require_writer(principal)
    row = await access.managed(session, principal, limit_id)
    refuse_foreign(row)
    require_authority(principal, row)
    await store.remove(session, row)
    notify.on_commit(session, registry)


async def status(session: AsyncSession, principal: Principal, limit_id: uuid.UUID) -> LimitStatusOut:
    row = await access.managed(session, principal, limit_id)
    return await status_out(session, row)


async def mine(
    session: AsyncSession, principal: Principal, cursor: str | None, limit: int
) -> Page[MyLimitOut]:
    """Limits on the caller and on every economy they take part in, each with its status."""
    check_limit(limit)
    after = time_id_cursor(cursor)
    economies = await economy_ids_of(
        session, principal.user_id, await room_ids_of(session, principal.user_id)
    )
    where = store.Filter(visible=store.on_subjects(economies, [principal.user_id]))
    rows = await store.page(session, where, after, limit + 1)
    data = [
        MyLimitOut(**limit_out(row).model_dump(), status=await status_out(session, row))
        for row in rows[:limit]
    ]
    return Page[MyLimitOut](data=data, next_cursor=_next_cursor(rows, limit))
