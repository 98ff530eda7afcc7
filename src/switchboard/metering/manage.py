"""The economy REST use cases: list, create, read, change economies and their participants."""

from __future__ import annotations

import uuid

from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.auth.principal import Principal
from switchboard.config_file import PriceOverride
from switchboard.errors import ValidationFailed
from switchboard.kit.pagination import Page, check_limit, decode_cursor, encode_cursor
from switchboard.metering import economies
from switchboard.metering.access import (
    access_to,
    participant_manager,
    require_economy_admin,
    usage_readable_ids,
    visible_economy_ids,
)
from switchboard.metering.participants import (
    Participant,
    list_participants,
    put_participant,
    remove_participant,
)
from switchboard.metering.resolution import forget_cached
from switchboard.metering.schemas import (
    EconomyCreate,
    EconomyOut,
    EconomyUpdate,
    ParticipantIn,
    ParticipantOut,
    PriceOverrideIn,
    PriceOverrideOut,
)


def economy_out(economy: economies.Economy) -> EconomyOut:
    return EconomyOut(
        id=economy.id,
        slug=economy.slug,
        name=economy.name,
        currency=economy.currency,
        markup_bps=economy.markup_bps,
        price_overrides={
            key: PriceOverrideOut.model_validate(value.model_dump())
            for key, value in economy.price_overrides.items()
        },
        budget=economy.budget,
        managed_by=economy.managed_by,  # type: ignore[arg-type]
        created_at=economy.created_at,
        updated_at=economy.updated_at,
    )


def participant_out(participant: Participant) -> ParticipantOut:
    is_user = participant.kind == "user"
    return ParticipantOut(
        economy_id=participant.economy_id,
        kind=participant.kind,  # type: ignore[arg-type]
        user_id=participant.participant_id if is_user else None,
        room_id=None if is_user else participant.participant_id,
        role=participant.role,  # type: ignore[arg-type]
        created_at=participant.created_at,
    )


def _overrides(values: dict[str, PriceOverrideIn]) -> dict[str, PriceOverride]:
    return {key: PriceOverride(**value.model_dump()) for key, value in values.items()}


def _forget(session: AsyncSession) -> None:
    bind = session.get_bind()
    forget_cached(bind if isinstance(bind, Engine) else bind.engine)


async def list_visible(
    session: AsyncSession,
    principal: Principal,
    cursor: str | None,
    limit: int,
    *,
    usage_readable: bool = False,
) -> Page[EconomyOut]:
    """`usage_readable`: only those whose usage the caller may read (the console's usage picker)."""
    check_limit(limit)
    after = decode_cursor(cursor)
    if after is not None and (len(after) != 1 or not isinstance(after[0], str)):
        raise ValidationFailed("cursor is not valid", param="cursor")
    only = await (usage_readable_ids if usage_readable else visible_economy_ids)(session, principal)
    found = await economies.list_economies(session, only, after[0] if after else None, limit + 1)
    more = len(found) > limit
    page = found[:limit]
    return Page(
        data=[economy_out(e) for e in page],
        next_cursor=encode_cursor([page[-1].slug]) if more and page else None,
    )


async def create(
    session: AsyncSession, principal: Principal, body: EconomyCreate, budgets: economies.BudgetLimits
) -> EconomyOut:
    require_economy_admin(principal)
    values = body.model_dump()
    values["price_overrides"] = _overrides(body.price_overrides)
    return economy_out(await economies.create_economy(session, values, budgets))


async def read(session: AsyncSession, principal: Principal, ref: str) -> EconomyOut:
    return economy_out((await access_to(session, principal, ref)).economy)


async def change(
    session: AsyncSession,
    principal: Principal,
    ref: str,
    body: EconomyUpdate,
    budgets: economies.BudgetLimits,
) -> EconomyOut:
    require_economy_admin(principal)
    economy = await economies.get_economy(session, ref)
    changes = {name: getattr(body, name) for name in body.model_fields_set}
    if body.price_overrides is not None:
        changes["price_overrides"] = _overrides(body.price_overrides)
    updated = await economies.update_economy(session, economy, changes, budgets)
    _forget(session)
    return economy_out(updated)


async def remove(
    session: AsyncSession, principal: Principal, ref: str, budgets: economies.BudgetLimits
) -> None:
    require_economy_admin(principal)
    await economies.delete_economy(session, await economies.get_economy(session, ref), budgets)
    _forget(session)


async def participants(
    session: AsyncSession, principal: Principal, ref: str, cursor: str | None, limit: int
) -> Page[ParticipantOut]:
    check_limit(limit)
    economy = await participant_manager(session, principal, ref, reading=True)
    after = decode_cursor(cursor)
    try:
        after_id = uuid.UUID(str(after[0])) if after else None
    except ValueError:
        raise ValidationFailed("cursor is not valid", param="cursor") from None
    found = await list_participants(session, economy.id, after_id, limit + 1)
    page = found[:limit]
    return Page(
        data=[participant_out(p) for p in page],
        next_cursor=encode_cursor([str(page[-1].participant_id)]) if len(found) > limit and page else None,
    )


async def add_participant(
    session: AsyncSession, principal: Principal, ref: str, body: ParticipantIn
) -> tuple[ParticipantOut, bool]:
    economy = await participant_manager(session, principal, ref)
    if body.user_id is not None:
        kind, participant_id, role = "user", body.user_id, body.role or "member"
    else:
        assert body.room_id is not None  # the schema guarantees one of the two
        kind, participant_id, role = "room", body.room_id, "member"
    participant, created = await put_participant(session, economy.id, kind, participant_id, role)
    _forget(session)
    return participant_out(participant), created


async def drop_participant(
    session: AsyncSession, principal: Principal, ref: str, participant_id: str
) -> None:
    economy = await participant_manager(session, principal, ref)
    parsed = economies.as_uuid(participant_id)
    if parsed is None:
        raise ValidationFailed("participant id must be a UUID", param="participant_id")
    await remove_participant(session, economy.id, parsed)
    _forget(session)
