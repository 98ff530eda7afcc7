"""The leases of this process's running calls' limit holds, renewed together by the upkeep loop.

A hold is leased so that a dead replica's reservations run out (SPEC §13). One statement per upkeep
tick renews every live call's holds: no task or timer per call.
"""

from __future__ import annotations

from datetime import timedelta
from typing import cast

from sqlalchemy import Table, bindparam, update
from sqlalchemy.ext.asyncio import AsyncConnection

from switchboard.kit.clock import utcnow
from switchboard.limits.models import LimitHoldRow

_HOLDS = cast(Table, LimitHoldRow.__table__)
_RENEW = (
    update(_HOLDS)
    .where(_HOLDS.c.call_id.in_(bindparam("b_calls", expanding=True)))
    .values(lease_until=bindparam("b_until", type_=_HOLDS.c.lease_until.type))
)
BATCH = 500  # call ids per statement, well under every driver's parameter limit


class HoldLeases:
    def __init__(self, lease_seconds: float) -> None:
        self.lease_seconds = lease_seconds
        self._live: set[str] = set()

    def __len__(self) -> int:
        return len(self._live)

    def add(self, call_id: str) -> None:
        self._live.add(call_id)

    def discard(self, call_id: str) -> None:
        self._live.discard(call_id)

    async def renew(self, conn: AsyncConnection) -> None:
        """Extends every live call's holds by a lease from now (the caller commits)."""
        if not self._live:
            return
        calls = list(self._live)
        until = utcnow() + timedelta(seconds=self.lease_seconds)
        for start in range(0, len(calls), BATCH):
            await conn.execute(_RENEW, {"b_calls": calls[start : start + BATCH], "b_until": until})
