"""An economy's `budget` (SPEC §8) is a cost/month limit on the economy, kept in step with it here."""

from __future__ import annotations

import uuid
from typing import cast

from sqlalchemy import Table, delete
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.db.upsert import insert_for
from switchboard.errors import ValidationFailed
from switchboard.kit.clock import utcnow
from switchboard.limits.models import LimitRow
from switchboard.limits.rules import MAX_AMOUNT, parse_amount
from switchboard.limits.store import MANAGED_BY_BUDGET

_LIMITS = cast(Table, LimitRow.__table__)


def budget_limit_id(economy_id: uuid.UUID) -> uuid.UUID:
    """Derived, so every replica and migration 0008's backfill name the same row."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:budget:{economy_id}")


def check_budget(budget: str | None) -> int | None:
    """The budget as a limit amount; 400 when it is more than a limit can count."""
    if budget is None:
        return None
    amount = parse_amount(budget)
    if amount is None:
        raise ValidationFailed(f"budget: at most {MAX_AMOUNT} nano-units", param="budget")
    return amount


async def sync_budget(session: AsyncSession, economy_id: uuid.UUID, budget: str | None) -> None:
    """Make the economy's budget limit say `budget`, or remove it when None.

    An upsert on the derived id: safe when replicas sync the same config at once, and a row that
    already says the same is left alone (no write on every start).
    """
    limit_id = budget_limit_id(economy_id)
    amount = check_budget(budget)
    if amount is None:
        await session.execute(delete(_LIMITS).where(_LIMITS.c.id == limit_id))
        return
    now = utcnow()
    statement = insert_for(session.get_bind().dialect.name)(_LIMITS).values(
        id=limit_id,
        subject_type="economy",
        subject_id=str(economy_id),
        economy_id=None,
        metric="cost",
        time_window="month",
        amount=str(amount),
        allow_unpriced=False,
        managed_by=MANAGED_BY_BUDGET,
        created_by=None,
        authority="admin",  # an economy's budget is set by an Admin (or the config file)
        created_at=now,
        updated_at=now,
    )
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["id"],
            set_={"amount": statement.excluded.amount, "updated_at": statement.excluded.updated_at},
            where=_LIMITS.c.amount != statement.excluded.amount,
        )
    )
