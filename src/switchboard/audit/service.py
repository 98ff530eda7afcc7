"""Reading the audit trail: filters, the visibility rules of GET /audit and the pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from switchboard.audit.events import JsonValue
from switchboard.audit.models import AuditEventRow as E
from switchboard.audit.presenting import published
from switchboard.auth.principal import Principal
from switchboard.errors import Forbidden, ValidationFailed
from switchboard.groups.service import managed_room_ids
from switchboard.kit.pagination import check_limit, decode_cursor, encode_cursor
from switchboard.metering.models import ParticipantRow
from switchboard.metering.timerange import parse_range

_NAME_LIMIT = 200


@dataclass(frozen=True)
class Filters:
    start: datetime | None = None
    stop: datetime | None = None
    actor: str | None = None
    action: str | None = None
    target_type: str | None = None
    target_id: str | None = None

    @classmethod
    def parse(
        cls,
        from_text: str | None,
        to_text: str | None,
        actor: str | None,
        action: str | None,
        target_type: str | None,
        target_id: str | None,
    ) -> Filters:
        start, stop = parse_range(from_text, to_text)
        for name, value in (
            ("actor", actor),
            ("action", action),
            ("target_type", target_type),
            ("target_id", target_id),
        ):
            if value is not None and (value == "" or len(value) > _NAME_LIMIT or not value.isprintable()):
                raise ValidationFailed(f"{name} must be 1 to {_NAME_LIMIT} printable characters", param=name)
        return cls(start, stop, actor, action, target_type, target_id)

    def clauses(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        if self.start is not None:
            found.append(E.at >= self.start)
        if self.stop is not None:
            found.append(E.at < self.stop)
        if self.actor is not None:
            found.append(E.actor_user_id == self.actor)
        if self.action is not None:
            found.append(E.action == self.action)
        if self.target_type is not None:
            found.append(E.target_type == self.target_type)
        if self.target_id is not None:
            found.append(E.target_id == self.target_id)
        return found


async def visible_to(session: AsyncSession, principal: Principal) -> ColumnElement[bool] | None:
    """None for everything (Admin); else the events of the economies the caller owns and the rooms
    they own or manage."""
    if principal.is_delegated:
        raise Forbidden("a delegation token cannot read the audit trail")
    if principal.is_admin:
        return None
    economies = await session.scalars(
        select(ParticipantRow.economy_id).where(
            ParticipantRow.participant_id == principal.user_id,
            ParticipantRow.kind == "user",
            ParticipantRow.role == "owner",
        )
    )
    economy_ids = [str(e) for e in economies]
    room_ids = [str(r) for r in await managed_room_ids(session, principal.user_id)]
    if not economy_ids and not room_ids:
        return false()
    return or_(E.economy_id.in_(economy_ids), E.room_id.in_(room_ids))


async def page(
    session: AsyncSession, principal: Principal, filters: Filters, cursor: str | None, limit: int
) -> tuple[list[dict[str, JsonValue]], str | None]:
    """Newest first, by the chain's sequence number."""
    check_limit(limit)
    after = decode_cursor(cursor)
    query = select(E).where(*filters.clauses())
    seen = await visible_to(session, principal)
    if seen is not None:
        query = query.where(seen)
    if after is not None:
        if len(after) != 1 or not isinstance(after[0], int):
            raise ValidationFailed("cursor is not valid", param="cursor")
        query = query.where(E.seq < after[0])
    rows = list(await session.scalars(query.order_by(E.seq.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    return [published(row) for row in rows], encode_cursor([rows[-1].seq]) if more else None


async def stream(
    session: AsyncSession, filters: Filters, batch: int = 1000
) -> AsyncIterator[dict[str, JsonValue]]:
    """Every matching event, oldest first (the CLI's export)."""
    last = 0
    while True:
        rows = list(
            await session.scalars(
                select(E).where(*filters.clauses(), E.seq > last).order_by(E.seq).limit(batch)
            )
        )
        for row in rows:
            yield published(row)
        if len(rows) < batch:
            return
        last = rows[-1].seq
