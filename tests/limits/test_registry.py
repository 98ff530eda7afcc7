"""Each process keeps every limit in memory (limits/registry.py): a change made on this process applies
to its next call, even when the periodic reload was reading the limits as the change committed."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

from switchboard.limits.models import LimitRow
from switchboard.limits.registry import LimitRegistry
from tests.support.gateway import Gateway


def test_a_change_made_while_a_reload_reads_is_read_again_by_the_next_call(gateway: Gateway) -> None:
    engine = gateway.app.state.engine
    economy_id, user_id = uuid.uuid4(), uuid.uuid4()
    limit_id = uuid.uuid4()

    async def race() -> tuple[int, int]:
        registry = LimitRegistry(engine)  # its own: the gateway's upkeep never reloads it
        await registry.reload()
        before = await registry.applying(economy_id, user_id, None, None, None)
        reading = asyncio.create_task(registry.reload())
        await asyncio.sleep(0)  # the reload has begun: what it reads may or may not hold the change
        registry.changed()
        await reading
        now = datetime.now(UTC)
        # The change its read may have missed, committed (this write stands for it, whichever it was).
        async with engine.begin() as conn:
            await conn.execute(
                LimitRow.__table__.insert().values(
                    id=limit_id, subject_type="user", subject_id=str(user_id), economy_id=None,
                    metric="requests", time_window="minute", amount="5", allow_unpriced=False,
                    managed_by="api", created_by=user_id, created_at=now, updated_at=now,
                )
            )  # fmt: skip
        after = await registry.applying(economy_id, user_id, None, None, None)
        async with engine.begin() as conn:
            await conn.execute(LimitRow.__table__.delete().where(LimitRow.__table__.c.id == limit_id))
        return len(before), len([limit for limit in after if limit.id == limit_id])

    assert gateway.server.call_soon(race(), timeout=60) == (0, 1)
