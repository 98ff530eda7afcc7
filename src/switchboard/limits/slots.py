"""A process's allowance slots and reclaim markers, as rows of `limit_holds` (SPEC §13).

A slot is a hold named `slot-<process>-<n>` sized to one call's worst case: `reserved` counts it, its
lease runs out with its process, and a call settled under its name ends it like any hold. A
`reclaim-<process>` row of amount 0 asks the other processes to return their free slots on a limit
(a call was refused there while others held slots). No column of its own: the hold's name says it.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, or_, select, update

from switchboard.db.driver_statements import driver_ready
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import LedgerConnection, WriteTransactions
from switchboard.kit.clock import utcnow
from switchboard.limits.ledger import Standing, lock_limits, standings_at
from switchboard.limits.models import LimitHoldRow
from switchboard.limits.rules import Limit

_HOLDS = cast(Table, LimitHoldRow.__table__)

SLOT = "slot-"
RECLAIM = "reclaim-"
PROCESS_ID_LENGTH = 12  # hex characters: a process's name among its replicas and their restarts
_PREFIX_LENGTH = len(SLOT) + PROCESS_ID_LENGTH + 1  # `slot-<process>-`
MAX_SLOTS = 64  # per allowance
SHARE = 8  # a grant takes at most 1/(SHARE * holders) of what a limit has left
BATCH = 500  # names per statement, well under every driver's parameter limit


@functools.cache
def _live_names(count: int) -> Any:
    """Slots' process prefixes and reclaim markers live on `count` limits (one parameter each: an
    expanding IN is compiled again at every execution)."""
    ids = [bindparam(f"id{index}", type_=_HOLDS.c.limit_id.type) for index in range(count)]
    return driver_ready(
        select(_HOLDS.c.limit_id, func.substr(_HOLDS.c.call_id, 1, _PREFIX_LENGTH))
        .where(
            _HOLDS.c.limit_id.in_(ids),
            or_(_HOLDS.c.call_id.like(f"{SLOT}%"), _HOLDS.c.call_id.like(f"{RECLAIM}%")),
            _HOLDS.c.lease_until > bindparam("b_now", type_=_HOLDS.c.lease_until.type),
        )
        .distinct()
    )


_ADD = driver_ready(_HOLDS.insert())
_RECLAIMED = (
    select(_HOLDS.c.limit_id)
    .where(
        _HOLDS.c.call_id.like(f"{RECLAIM}%"),
        _HOLDS.c.lease_until > bindparam("b_now", type_=_HOLDS.c.lease_until.type),
    )
    .distinct()
)
_RETURN = delete(_HOLDS).where(_HOLDS.c.call_id.in_(bindparam("b_names", expanding=True)))
_RENEW = (
    update(_HOLDS)
    .where(
        _HOLDS.c.limit_id.in_(bindparam("b_limits", expanding=True)),
        _HOLDS.c.call_id.like(bindparam("b_prefix")),
    )
    .values(lease_until=bindparam("b_until", type_=_HOLDS.c.lease_until.type))
)
_REMEMBER = (
    update(_HOLDS)
    .where(_HOLDS.c.limit_id == bindparam("b_limit"), _HOLDS.c.call_id == bindparam("b_name"))
    .values(call=bindparam("b_call", type_=_HOLDS.c.call.type))
)


def prefix_of(process: str) -> str:
    return f"{SLOT}{process}-"


def is_allowance_row(name: str) -> bool:
    return name.startswith((SLOT, RECLAIM))


async def _names(conn: LedgerConnection, ids: Sequence[uuid.UUID], now: datetime) -> list[tuple[Any, str]]:
    parameters: dict[str, Any] = {f"id{index}": limit_id for index, limit_id in enumerate(ids)}
    parameters["b_now"] = now
    result = await conn.execute(_live_names(len(ids)), parameters)
    return [(row[0], row[1]) for row in result]


async def grant(
    transactions: WriteTransactions,
    limits: Sequence[Limit],
    sizes: Sequence[int],
    wanted: int,
    names: Sequence[str],
    lease_seconds: float,
    free: int = 0,
) -> tuple[list[Standing], int]:
    """Holds up to `wanted` slots of `sizes` (per limit, in the order of `limits`) under the names
    given, in one transaction under the limits' locks, as a reservation takes them. How many: the
    process's `free` slots (of these sizes) and the new ones together hold at most what each limit
    has left (those free slots included) over SHARE times the processes holding slots there (this
    one included); none while a reclaim marker is live on one of them. Returns the standings read
    (before the new slots) and how many were held: the first that many of `names`."""
    ids = [limit.id for limit in limits]
    own = names[0][:_PREFIX_LENGTH] if names else ""
    async with transactions.rows_locked_here(ids), transactions.begin() as conn:
        now = utcnow()
        await lock_limits(conn, ids)
        standings = await standings_at(conn, limits, now, create_missing=True)
        holders: dict[Any, set[str]] = {}
        count = min(wanted, len(names))
        for limit_id, name in await _names(conn, ids, now):
            if name.startswith(RECLAIM):
                count = 0
            holders.setdefault(limit_id, set()).add(name)
        for standing, size in zip(standings, sizes, strict=True):
            share = len(holders.get(standing.limit.id, set()) | {own})
            size = max(size, 1)
            count = min(count, (standing.remaining + free * size) // (SHARE * share * size) - free)
        if count > 0:
            until = now + timedelta(seconds=lease_seconds)
            rows = [
                {"limit_id": limit_id, "call_id": name, "amount": size, "lease_until": until, "call": None}
                for name in names[:count]
                for limit_id, size in zip(ids, sizes, strict=True)
            ]
            await conn.execute(_ADD, rows)
    return standings, max(count, 0)


async def give_back(conn: LedgerConnection, names: Sequence[str]) -> None:
    """Ends slots nobody is using: what they held is the limits' again."""
    for start in range(0, len(names), BATCH):
        await conn.execute(_RETURN, {"b_names": list(names[start : start + BATCH])})


async def renew(conn: LedgerConnection, ids: Sequence[uuid.UUID], process: str, seconds: float) -> None:
    """Extends every slot of this process on these limits (free or in use) by a lease from now."""
    if ids:
        until = utcnow() + timedelta(seconds=seconds)
        parameters = {"b_limits": list(ids), "b_prefix": prefix_of(process) + "%", "b_until": until}
        await conn.execute(_RENEW, parameters)


async def remember_calls(conn: LedgerConnection, calls: Sequence[tuple[uuid.UUID, str, object]]) -> None:
    """Leaves each running call's record on its slot's row (limit, slot, record): should this process
    die, recovery writes the call's `abandoned` record from it."""
    if calls:
        await conn.execute(_REMEMBER, [{"b_limit": i, "b_name": n, "b_call": c} for i, n, c in calls])


async def reclaimed(conn: LedgerConnection, now: datetime) -> set[Any]:
    """The limits on which a process asked for free slots back."""
    return {row[0] for row in await conn.execute(_RECLAIMED, {"b_now": now})}


async def others_hold(conn: LedgerConnection, ids: Sequence[uuid.UUID], process: str) -> bool:
    own = prefix_of(process)
    return any(name.startswith(SLOT) and name != own for _, name in await _names(conn, ids, utcnow()))


async def ask_back(conn: LedgerConnection, ids: Sequence[uuid.UUID], process: str, seconds: float) -> None:
    """Puts (or extends) this process's reclaim marker on each limit, for `seconds`."""
    until = utcnow() + timedelta(seconds=seconds)
    name = f"{RECLAIM}{process}"
    insert = insert_for(conn.dialect.name)(_HOLDS)
    for limit_id in ids:
        values = {"limit_id": limit_id, "call_id": name, "amount": 0, "lease_until": until, "call": None}
        await conn.execute(
            insert.values(values).on_conflict_do_update(
                index_elements=["limit_id", "call_id"], set_={"lease_until": until}
            )
        )
