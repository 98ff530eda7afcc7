"""budget.threshold (SPEC §22): which of 50, 80 and 100 % of a cost limit's amount its `used` has
reached in the current window, read after a settlement on this process touched the limit."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard.kit.clock import utcnow
from switchboard.limits.ledger import status_of
from switchboard.limits.rules import Limit
from switchboard.webhooks.events import BUDGET_THRESHOLD, THRESHOLDS
from switchboard.webhooks.hub import Pending, limit_data, limit_scope, window_key


async def crossed(engine: AsyncEngine, limits: list[Limit]) -> list[Pending]:
    """One event per threshold each limit's `used` has reached, lowest first; the dispatcher sends
    each once per window (its mark)."""
    now = utcnow()
    found: list[Pending] = []
    async with engine.connect() as conn:
        for limit in limits:
            status = await status_of(conn, limit)
            window = window_key(limit, now)
            for threshold in THRESHOLDS:
                if status.used * 100 < threshold * limit.amount:
                    break
                data = {
                    "limit": limit_data(limit),
                    "threshold": threshold,
                    "used": str(status.used),
                    "amount": str(limit.amount),
                    "window_start": window.isoformat(),
                    "resets_at": status.resets_at.isoformat() if status.resets_at is not None else None,
                }
                found.append(
                    Pending(BUDGET_THRESHOLD, str(limit.id), window, limit_scope(limit), data, threshold)
                )
    return found
