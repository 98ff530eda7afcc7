"""What a subject's usage records count since a moment: where a new limit's counter starts (SPEC §13)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, func, select

from switchboard.db.write_transaction import LedgerConnection
from switchboard.metering.models import UsageRecordRow
from switchboard.metering.rollup_summary import counted_in_rollups

_RECORDS = cast(Table, UsageRecordRow.__table__)
_COLUMNS = {
    "economy": _RECORDS.c.economy_id,
    "user": _RECORDS.c.user_id,
    "room": _RECORDS.c.room_id,
    "api_key": _RECORDS.c.api_key_id,
    "agent": _RECORDS.c.agent_id,
}


async def counted_since(
    conn: LedgerConnection,
    subject_type: str,
    subject_id: str,
    economy_id: uuid.UUID | None,
    metric: str,
    start: datetime | None,
) -> int:
    """The subject's `metric` (cost, tokens or requests) in its records since `start` (None: ever),
    narrowed to `economy_id` when given."""
    subject: object = subject_id if subject_type == "agent" else uuid.UUID(subject_id)
    # The hourly rollups say the same in far fewer rows, and still know what retention deleted.
    counted = await counted_in_rollups(conn, subject_type, subject, economy_id, metric, start)
    if counted is not None:
        return counted
    measure: Any = {
        "cost": func.coalesce(func.sum(_RECORDS.c.cost), 0),
        "tokens": func.coalesce(func.sum(_RECORDS.c.prompt_tokens + _RECORDS.c.completion_tokens), 0),
        "requests": func.count(),
    }[metric]
    query = select(measure).where(_COLUMNS[subject_type] == subject)
    if economy_id is not None:
        query = query.where(_RECORDS.c.economy_id == economy_id)
    if start is not None:
        query = query.where(_RECORDS.c.occurred_at >= start)
    return int(await conn.scalar(query) or 0)
