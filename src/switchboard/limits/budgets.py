"""An economy's `budget` (SPEC §8) is a cost/month limit on the economy, kept in step with it here
(metering's economy changes call `EconomyBudgets`, handed to them as their `BudgetLimits`)."""

from __future__ import annotations

import uuid
from typing import cast

from sqlalchemy import ColumnElement, Table, delete, exists, or_
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import State

from switchboard.db.upsert import insert_for
from switchboard.errors import ValidationFailed
from switchboard.kit.amounts import MAX_AMOUNT, parse_amount
from switchboard.kit.clock import utcnow
from switchboard.limits import notify
from switchboard.limits.models import LimitRow
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


class EconomyBudgets:
    """metering.economies.BudgetLimits, built in create_app: a budget's change also tells this
    process's limit registry (`state.limits`, once the pipeline started) after it commits."""

    def __init__(self, state: State | None = None) -> None:
        self._state = state

    async def sync(self, session: AsyncSession, economy_id: uuid.UUID, budget: str | None) -> None:
        await sync_budget(session, economy_id, budget)
        if self._state is not None:
            # A budget is a limit: this process applies it from the next call.
            notify.on_commit(session, getattr(self._state, "limits", None))

    def others_apply(self, economy_id: uuid.UUID) -> ColumnElement[bool]:
        return exists().where(
            or_(
                LimitRow.economy_id == economy_id,
                (LimitRow.subject_type == "economy") & (LimitRow.subject_id == str(economy_id)),
            ),
            LimitRow.id != budget_limit_id(economy_id),
        )
