"""Newest-first keyset pages over (created_at, id), for the auth listings."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, and_, or_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from switchboard.errors import ValidationFailed
from switchboard.kit.pagination import check_limit, decode_cursor, encode_cursor

Row = TypeVar("Row")


def _position(cursor: str | None) -> tuple[datetime, uuid.UUID] | None:
    key = decode_cursor(cursor)
    if key is None:
        return None
    try:
        created_text, id_text = key
        return datetime.fromisoformat(str(created_text)), uuid.UUID(str(id_text))
    except (TypeError, ValueError):
        raise ValidationFailed("cursor is not valid", param="cursor") from None


async def newest_first(
    session: AsyncSession,
    query: Select[Row],
    created_at: InstrumentedAttribute[datetime],
    ident: InstrumentedAttribute[uuid.UUID],
    cursor: str | None,
    limit: int,
) -> tuple[Sequence[Row], str | None]:
    check_limit(limit)
    position = _position(cursor)
    if position is not None:
        when, after = position
        query = query.where(or_(created_at < when, and_(created_at == when, ident < after)))
    query = query.order_by(created_at.desc(), ident.desc()).limit(limit + 1)
    rows = list((await session.scalars(query)).all())
    if len(rows) <= limit:
        return rows, None
    last: Any = rows[limit - 1]
    key = (getattr(last, created_at.key).isoformat(), str(getattr(last, ident.key)))
    return rows[:limit], encode_cursor(key)
