"""Reading and writing `limits` rows, shared by the API, the CLI, budgets and the config sync."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.kit.clock import utcnow
from switchboard.limits.models import LimitRow
from switchboard.limits.rules import Limit

MANAGED_BY_API = "api"
MANAGED_BY_CONFIG = "config"
MANAGED_BY_BUDGET = "budget"


@dataclass(frozen=True)
class LimitKey:
    """What a limit counts: two limits with the same key would count the same thing twice."""

    subject_type: str
    subject_id: str
    economy_id: uuid.UUID | None
    metric: str
    window: str

    def canonical(self) -> str:
        economy = str(self.economy_id) if self.economy_id is not None else "-"
        return f"{self.subject_type}:{self.subject_id}:{self.metric}:{self.window}:{economy}"


def key_of(row: LimitRow) -> LimitKey:
    return LimitKey(row.subject_type, row.subject_id, row.economy_id, row.metric, row.window)


def to_limit(row: LimitRow) -> Limit:
    """The enforcement view of a row; amounts are stored as text and always integer strings."""
    return Limit(
        id=row.id,
        subject_type=row.subject_type,  # type: ignore[arg-type]
        subject_id=row.subject_id,
        economy_id=row.economy_id,
        metric=row.metric,  # type: ignore[arg-type]
        window=row.window,  # type: ignore[arg-type]
        amount=int(row.amount),
        allow_unpriced=row.allow_unpriced,
        managed_by=row.managed_by,
    )


def new_row(
    key: LimitKey,
    amount: int,
    *,
    allow_unpriced: bool,
    managed_by: str = MANAGED_BY_API,
    created_by: uuid.UUID | None = None,
    limit_id: uuid.UUID | None = None,
    authority: str,
) -> LimitRow:
    now = utcnow()
    return LimitRow(
        id=limit_id or uuid.uuid4(),
        subject_type=key.subject_type,
        subject_id=key.subject_id,
        economy_id=key.economy_id,
        metric=key.metric,
        window=key.window,
        amount=str(amount),
        allow_unpriced=allow_unpriced,
        managed_by=managed_by,
        created_by=created_by,
        authority=authority,
        created_at=now,
        updated_at=now,
    )


async def add(session: AsyncSession, row: LimitRow) -> LimitRow:
    session.add(row)
    await session.flush()
    return row


async def get(session: AsyncSession, limit_id: uuid.UUID) -> LimitRow | None:
    return await session.get(LimitRow, limit_id)


async def same_key(session: AsyncSession, key: LimitKey) -> LimitRow | None:
    """The oldest limit counting exactly what `key` counts, if any."""
    economy = (
        LimitRow.economy_id.is_(None) if key.economy_id is None else LimitRow.economy_id == key.economy_id
    )
    return await session.scalar(
        select(LimitRow)
        .where(
            LimitRow.subject_type == key.subject_type,
            LimitRow.subject_id == key.subject_id,
            LimitRow.metric == key.metric,
            LimitRow.window == key.window,
            economy,
        )
        .order_by(LimitRow.created_at, LimitRow.id)
        .limit(1)
    )


async def change(
    session: AsyncSession,
    row: LimitRow,
    *,
    amount: int | None,
    allow_unpriced: bool | None,
    authority: str | None = None,
) -> LimitRow:
    if authority is not None:  # the limit is now the word of whoever changed it
        row.authority = authority
    if amount is not None:
        row.amount = str(amount)
    if allow_unpriced is not None:
        row.allow_unpriced = allow_unpriced
    row.updated_at = utcnow()
    await session.flush()
    return row


async def remove(session: AsyncSession, row: LimitRow) -> None:
    # Its counters (limit_usage) stay: they belong to the ledger, and a limit with a stable id
    # (a budget, a config limit) that comes back in the same window finds what it had counted.
    await session.delete(row)  # through the ORM, so the audit trail records it
    await session.flush()


@dataclass(frozen=True)
class Filter:
    """What a list is narrowed to; `visible` is the caller's reach (None: everything)."""

    subject_type: str | None = None
    subject_id: str | None = None
    economy_id: uuid.UUID | None = None
    visible: ColumnElement[bool] | None = None


def _subjects(subject_type: str, ids: Collection[uuid.UUID]) -> ColumnElement[bool]:
    return and_(LimitRow.subject_type == subject_type, LimitRow.subject_id.in_([str(i) for i in ids]))


def reach(economies: Collection[uuid.UUID], rooms: Collection[uuid.UUID]) -> ColumnElement[bool]:
    """Limits inside `economies` (on one, or narrowed to one) and limits on `rooms`."""
    parts: list[ColumnElement[bool]] = []
    if economies:
        parts += [LimitRow.economy_id.in_(economies), _subjects("economy", economies)]
    if rooms:
        parts.append(_subjects("room", rooms))
    return or_(*parts) if parts else false()


def on_subjects(economies: Collection[uuid.UUID], users: Collection[uuid.UUID]) -> ColumnElement[bool]:
    """Limits whose subject is one of `economies` or one of `users` (narrowed or not)."""
    return or_(_subjects("economy", economies), _subjects("user", users))


async def page(
    session: AsyncSession, where: Filter, after: tuple[datetime, uuid.UUID] | None, limit: int
) -> list[LimitRow]:
    """Oldest first, in (created_at, id) order: stable while limits come and go."""
    query = select(LimitRow).order_by(LimitRow.created_at, LimitRow.id).limit(limit)
    if where.subject_type is not None:
        query = query.where(LimitRow.subject_type == where.subject_type)
    if where.subject_id is not None:
        query = query.where(LimitRow.subject_id == where.subject_id)
    if where.economy_id is not None:
        query = query.where(LimitRow.economy_id == where.economy_id)
    if where.visible is not None:
        query = query.where(where.visible)
    if after is not None:
        created_at, limit_id = after
        query = query.where(
            or_(
                LimitRow.created_at > created_at,
                and_(LimitRow.created_at == created_at, LimitRow.id > limit_id),
            )
        )
    return list(await session.scalars(query))
