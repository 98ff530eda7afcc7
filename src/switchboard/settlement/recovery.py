"""Crash recovery (SPEC §13): a dead call's holds and idempotency claim freed with its `abandoned` record.

A call whose replica died leaves its limit holds and idempotency claim behind; once their lease has
run out, one `abandoned` record is written for it and both are freed. Every replica sweeps (from
llm/upkeep.py); the record's id is the one the call's own record would have had (named in its record
for recovery; derived from the call's id for a record that names none), and the transaction commits
it only while it frees what the dead call held (settlement/transaction.py), so two sweepers (or a
sweeper and a late settlement) write it once. A row of running calls' records (limits/call_records.py)
lists several calls, some of which may have settled: each is written unless its id is stored.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from switchboard.db.driver_statements import driver_ready
from switchboard.db.write_transaction import LedgerConnection
from switchboard.idempotency.service import Claim, IdempotencyStore
from switchboard.kit.clock import utcnow
from switchboard.limits.allowance_rows import CALLS, is_allowance_row, listed_calls
from switchboard.limits.models import LimitHoldRow
from switchboard.metering.outcome import CallOutcome
from switchboard.metering.spool import outcome_from_json
from switchboard.metering.writer import UsageWriter
from switchboard.settlement.call import Settlement

log = logging.getLogger("switchboard.settlement.recovery")

_HOLDS = cast(Table, LimitHoldRow.__table__)
_RELEASE_DEAD = driver_ready(
    delete(_HOLDS).where(_HOLDS.c.call_id == bindparam("b_call"), _HOLDS.c.lease_until <= bindparam("b_now"))
)


@dataclass(frozen=True)
class DeadCalls:
    """What a sweep found: calls whose holds, or whose idempotency claims, outlived their lease."""

    holds: list[tuple[str, dict[str, Any] | None]]
    claims: list[tuple[Claim, dict[str, Any]]]


def abandoned_record_id(call_id: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"switchboard:abandoned:{call_id}")


async def remember_call(conn: AsyncConnection, call_id: str, call: object) -> None:
    """Replaces a running call's record for recovery (a later attempt of the call is under way)."""
    await conn.execute(update(_HOLDS).where(_HOLDS.c.call_id == call_id).values(call=call))


async def release_dead_holds(conn: LedgerConnection, call_id: str, now: datetime) -> bool:
    """Frees a dead call's holds; False when they were settled or renewed meanwhile."""
    result = await conn.execute(_RELEASE_DEAD, {"b_call": call_id, "b_now": now})
    return bool(result.rowcount)


async def still_held(conn: LedgerConnection, row: str) -> bool:
    """Whether a row of running calls' records is there (its process renewed it meanwhile: alive)."""
    found = await conn.execute(select(_HOLDS.c.call_id).where(_HOLDS.c.call_id == row).limit(1))
    return found.scalar() is not None


async def dead_calls(
    conn: AsyncConnection, now: datetime, batch: int = 100
) -> list[tuple[str, dict[str, Any] | None]]:
    """Calls whose holds' lease ran out: their replica died (or lost the database for a lease)."""
    rows = await conn.execute(
        # A call's holds together: only one of them carries its record.
        select(_HOLDS.c.call_id, _HOLDS.c.call)
        .where(_HOLDS.c.lease_until <= now)
        .order_by(_HOLDS.c.call_id)
        .limit(batch)
    )
    found: dict[str, dict[str, Any] | None] = {}
    for call_id, call in rows:
        if found.get(call_id) is None:
            found[call_id] = call
    return list(found.items())


async def find_dead_calls(conn: AsyncConnection, now: datetime) -> DeadCalls:
    """Both reads on the caller's connection (the upkeep's one checkout)."""
    return DeadCalls(await dead_calls(conn, now), await IdempotencyStore.dead_calls(conn, now))


async def drop_dead_allowances(engine: AsyncEngine, dead: DeadCalls, now: datetime) -> None:
    """A dead process's allowances and reclaim markers (limits/allowance_rows.py) name no call: once
    their lease ran out nothing counts them, and they are deleted. The row a running call's record
    was left on is recovered like a call's holds."""
    names = [call_id for call_id, record in dead.holds if record is None and is_allowance_row(call_id)]
    if names:
        async with engine.begin() as conn:
            await conn.execute(_RELEASE_DEAD, [{"b_call": name, "b_now": now} for name in names])


async def drop_unreadable(
    engine: AsyncEngine, idempotency: IdempotencyStore, dead: DeadCalls, now: datetime
) -> DeadCalls:
    """The dead calls whose records recovery can read. A record it cannot turn into an `abandoned`
    one (written by hand, or by another version) would stop every sweep at the same row: its call is
    left unrecorded, with a warning naming the row, and what it held is freed. A shared row keeps
    the calls it lists that can be read."""
    holds: list[tuple[str, dict[str, Any] | None]] = []
    dropped: list[str] = []
    for row, record in dead.holds:
        if record is None:
            holds.append((row, record))
            continue
        readable = _readable(record, row)
        if readable is None:
            dropped.append(row)
        else:
            holds.append((row, readable))
    claims: list[tuple[Claim, dict[str, Any]]] = []
    unclaimed: list[Claim] = []
    for claim, record in dead.claims:
        if _readable(record, "an idempotency claim") is record:
            claims.append((claim, record))
        else:
            unclaimed.append(claim)
    if dropped or unclaimed:
        async with engine.begin() as conn:
            for row in dropped:
                await conn.execute(_RELEASE_DEAD, {"b_call": row, "b_now": now})
            for claim in unclaimed:
                await idempotency.release_dead_in(conn, claim, now)
    return DeadCalls(holds, claims)


def _readable(record: object, row: str) -> dict[str, Any] | None:
    """`record` when recovery can write each call it names, else None; a shared row's as `{"calls":
    [...]}` of the whole records it can write. `row`: where it was found, for the warning."""
    if isinstance(record, dict) and CALLS in record:
        calls = [one for one in listed_calls(record) if _readable(one, row) is one]
        return {CALLS: calls} if calls else None
    try:
        if not isinstance(record, dict):
            raise TypeError("not an object")
        _abandoned(record)
        _record_id(record, row)
    except Exception as error:  # what it is, not what it says: a record names users and models
        log.warning(
            "recovery cannot read a dead call's record on %s (%s): the call is left unrecorded",
            row,
            type(error).__name__,
        )
        return None
    return record


def _abandoned(record: dict[str, Any]) -> CallOutcome:
    return outcome_from_json({**record, "occurred_at": utcnow().isoformat()})


def _record_id(record: dict[str, Any], call_id: str) -> uuid.UUID:
    named = record.get("record_id")
    return uuid.UUID(str(named)) if named else abandoned_record_id(str(record.get("call_id") or call_id))


async def recover(sink: UsageWriter[Settlement], dead: DeadCalls) -> int:
    """Writes each dead call's `abandoned` record with what frees its holds or claim; returns how
    many records it handed to the writer."""
    written = 0
    for row, record in dead.holds:
        if record is None:
            continue
        listed = CALLS in record
        for one in listed_calls(record) if listed else [record]:
            # A shared row carries calls' records: each is named by its call, not the row.
            settlement = Settlement(
                call_id=row, abandoned=True, record_id=_record_id(one, row), listed=listed
            )
            await sink.record(_abandoned(one), settlement)
            written += 1
    for claim, record in dead.claims:
        settlement = Settlement(claim=claim, abandoned=True, record_id=_record_id(record, claim.token))
        await sink.record(_abandoned(record), settlement)
        written += 1
    return written
