"""Every limit, in memory on each process, indexed by subject: a call with none pays a dict lookup.

Reloaded every 2 s by the pipeline's upkeep (llm/upkeep.py), so a change on another
replica applies within that, and before the next call after a change on this process.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any, cast

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from switchboard.limits.models import LimitRow
from switchboard.limits.rules import Limit
from switchboard.limits.store import to_limit

_T = cast(Table, LimitRow.__table__)


# The rows as `store.to_limit` reads them: `window` is the column `time_window`.
_ALL = select(*(column for column in _T.c if column.name != "time_window"), _T.c.time_window.label("window"))


FOUND_KEPT = 10_000  # distinct callers remembered between reloads; past that the memory starts over


class LimitRegistry:
    """`app.state.limits`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._by_subject: dict[tuple[str, str], tuple[Limit, ...]] = {}
        self._by_id: dict[uuid.UUID, Limit] = {}
        # What `applying` found per call's subjects since the last reload: the same callers call again.
        self._found: dict[tuple[Any, ...], tuple[Limit, ...]] = {}
        self._stale = True
        self._changes = 0  # how many times `changed()` was called: a reload knows what it may have missed

    def changed(self) -> None:
        """A limit was written on this process: the next call reloads first."""
        self._changes += 1
        self._stale = True

    async def reload(self, conn: AsyncConnection | None = None) -> None:
        """Every limit, read afresh; on `conn` when the caller has one checked out already."""
        changes = self._changes
        if conn is None:
            async with self._engine.connect() as own:
                rows = (await own.execute(_ALL)).all()
        else:
            rows = (await conn.execute(_ALL)).all()
        by_subject: dict[tuple[str, str], list[Limit]] = defaultdict(list)
        by_id: dict[uuid.UUID, Limit] = {}
        for row in rows:
            limit = to_limit(cast(LimitRow, row))
            by_subject[(limit.subject_type, limit.subject_id)].append(limit)
            by_id[limit.id] = limit
        self._by_subject = {key: tuple(value) for key, value in by_subject.items()}
        self._by_id = by_id
        self._found = {}
        # A change committed while this read was under way (the periodic reload's, say) may be missing
        # from it: then the next call reads again.
        self._stale = self._changes != changes

    async def applying(
        self,
        economy_id: uuid.UUID,
        user_id: uuid.UUID,
        room_id: uuid.UUID | None,
        agent_id: str | None,
        api_key_id: uuid.UUID | None,
    ) -> tuple[Limit, ...]:
        """Every limit on the call's economy, user, room, agent and api key (narrowed ones if they match)."""
        if self._stale:
            await self.reload()
        if not self._by_subject:
            return ()
        # Keyed by the ids' integers: a UUID hashes in Python, an int in C.
        key = (
            economy_id.int,
            user_id.int,
            room_id.int if room_id is not None else None,
            agent_id,
            api_key_id.int if api_key_id is not None else None,
        )
        found = self._found.get(key)
        if found is None:
            found = self._applying((economy_id, user_id, room_id, agent_id, api_key_id))
            if len(self._found) >= FOUND_KEPT:
                self._found = {}
            self._found[key] = found
        return found

    def _applying(self, subjects: tuple[Any, ...]) -> tuple[Limit, ...]:
        economy_id, user_id, room_id, agent_id, api_key_id = subjects
        by_subject = self._by_subject
        keys = [("economy", str(economy_id)), ("user", str(user_id))]
        if room_id is not None:
            keys.append(("room", str(room_id)))
        if agent_id is not None:
            keys.append(("agent", agent_id))
        if api_key_id is not None:
            keys.append(("api_key", str(api_key_id)))
        found: list[Limit] = []
        for key in keys:
            for limit in by_subject.get(key, ()):
                if limit.economy_id is None or limit.economy_id == economy_id:
                    found.append(limit)
        return tuple(found)

    def get(self, limit_id: uuid.UUID) -> Limit | None:
        return self._by_id.get(limit_id)
