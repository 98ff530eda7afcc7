"""A process's allowances, its calls' records and its reclaim markers, as rows of `limit_holds` (SPEC §13).

- An allowance is a hold named `slot-<process>-<n>` on each of its limits: what the process may still
  admit there in memory. `reserved` counts it like any hold, its lease runs out with its process.
  A grant adds to it; each settlement of a call admitted on it draws what the call used from it, in
  the usage record's transaction; what is free goes back when idle or asked for.
- A call admitted on an allowance leaves its record before the provider is called on a row shared
  with the calls starting together, `slot-<process>-r<n>` (amount 0, on the allowance's first limit;
  `call` is `{"shared": {field: value}, "calls": [{field: value}, ...]}`, the fields every call has
  alike written once, `listed_calls`): recovery writes their `abandoned` records from it if the
  process dies (limits/call_records.py). A call with an idempotency claim has none: its claim
  carries its record.
- A `reclaim-<process>` row of amount 0 asks the other processes to give back their free parts of a
  limit (a call was refused there while others held allowances).

No column of their own: the hold's name says what it is.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, literal_column, or_, select, update

from switchboard.db.driver_statements import driver_ready
from switchboard.db.engine import json_text
from switchboard.db.upsert import insert_for
from switchboard.db.write_transaction import LedgerConnection, WriteTransactions
from switchboard.kit.clock import utcnow
from switchboard.limits.ledger import Standing, lock_limits, standings_at
from switchboard.limits.models import LimitHoldRow
from switchboard.limits.postgres_reserve import grant_in_one_statement
from switchboard.limits.rules import Limit

_HOLDS = cast(Table, LimitHoldRow.__table__)

SLOT = "slot-"
RECLAIM = "reclaim-"
CALLS = "calls"  # a records row's list of calls, each with the fields it does not share (`listing`)
SHARED = "shared"  # a records row's fields every call it lists has alike
PROCESS_ID_LENGTH = 12  # hex characters: a process's name among its replicas and their restarts
_PREFIX_LENGTH = len(SLOT) + PROCESS_ID_LENGTH + 1  # `slot-<process>-`
MAX_CALLS = 256  # an allowance holds at most this many worst cases (of its largest call so far)
SHARE = 8  # a grant takes at most 1/(SHARE * holders) of what a limit has left
BATCH = 500  # rows per statement, well under every driver's parameter limit


def _pattern(prefix: str) -> Any:
    """`prefix%` written into the statement (one of this module's prefixes, not input): SQLite
    compiles a statement again at every execution whose LIKE pattern is a bound parameter (the value
    decides whether an index may serve it); on SQLite that was a fifth of every grant's instructions."""
    return literal_column(f"'{prefix}%'")


@functools.cache
def _live_names(count: int) -> Any:
    """Allowances' process prefixes and reclaim markers live on `count` limits (one parameter each: an
    expanding IN is compiled again at every execution)."""
    ids = [bindparam(f"id{index}", type_=_HOLDS.c.limit_id.type) for index in range(count)]
    return driver_ready(
        select(_HOLDS.c.limit_id, func.substr(_HOLDS.c.call_id, 1, _PREFIX_LENGTH))
        .where(
            _HOLDS.c.limit_id.in_(ids),
            or_(_HOLDS.c.call_id.like(_pattern(SLOT)), _HOLDS.c.call_id.like(_pattern(RECLAIM))),
            _HOLDS.c.lease_until > bindparam("b_now", type_=_HOLDS.c.lease_until.type),
        )
        .distinct()
    )


@functools.cache
def _add(dialect: str) -> Any:
    """Adds to an allowance's row (made when missing), renewing its lease."""
    insert = insert_for(dialect)(_HOLDS).values(
        limit_id=bindparam("b_limit", type_=_HOLDS.c.limit_id.type),
        call_id=bindparam("b_name"),
        amount=bindparam("b_amount", type_=_HOLDS.c.amount.type),
        lease_until=bindparam("b_until", type_=_HOLDS.c.lease_until.type),
        call=None,
    )
    return driver_ready(
        insert.on_conflict_do_update(
            index_elements=["limit_id", "call_id"],
            set_={
                "amount": _HOLDS.c.amount + insert.excluded.amount,
                "lease_until": insert.excluded.lease_until,
            },
        )
    )


@functools.cache
def _draw(dialect: str) -> Any:
    """Takes from an allowance's row, never below 0 (a call that cost more than its worst case)."""
    greatest = func.greatest if dialect == "postgresql" else func.max
    return driver_ready(
        update(_HOLDS)
        .where(
            _HOLDS.c.limit_id == bindparam("b_limit", type_=_HOLDS.c.limit_id.type),
            _HOLDS.c.call_id == bindparam("b_name"),
        )
        .values(amount=greatest(_HOLDS.c.amount - bindparam("b_amount", type_=_HOLDS.c.amount.type), 0))
    )


_DROP = driver_ready(
    delete(_HOLDS).where(
        _HOLDS.c.limit_id == bindparam("b_limit", type_=_HOLDS.c.limit_id.type),
        _HOLDS.c.call_id == bindparam("b_name"),
    )
)
_RECORD = driver_ready(_HOLDS.insert())
_RECLAIMED = (
    select(_HOLDS.c.limit_id)
    .where(
        _HOLDS.c.call_id.like(_pattern(RECLAIM)),
        _HOLDS.c.lease_until > bindparam("b_now", type_=_HOLDS.c.lease_until.type),
    )
    .distinct()
)
_RENEW = (
    update(_HOLDS)
    .where(
        _HOLDS.c.limit_id.in_(bindparam("b_limits", expanding=True)),
        _HOLDS.c.call_id.like(bindparam("b_prefix")),
    )
    .values(lease_until=bindparam("b_until", type_=_HOLDS.c.lease_until.type))
)

# (limit id, row name, amount): a change to one allowance row, or a row to delete (amount unused).
Part = tuple[uuid.UUID, str, int]


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
    name: str,
    lease_seconds: float,
    free: int = 0,
) -> tuple[list[Standing], int]:
    """Adds up to `wanted` worst cases of `sizes` (per limit, in the order of `limits`) to the
    allowance `name`, under the limits' locks, as a reservation takes them. How many: the `free`
    worst cases the allowance has room for and the new ones together hold at most what each limit
    has left (the allowance included) over SHARE times the processes holding allowances there (this
    one included); none while a reclaim marker is live on one of them. Returns the standings read
    (before the grant) and how many worst cases were added.

    PostgreSQL: in one statement (migration 0020's function), unless a calendar window has no counter
    yet, which the transaction creates."""
    if transactions.dialect_name == "postgresql":
        own = name[:_PREFIX_LENGTH]
        granted = await grant_in_one_statement(
            transactions, limits, sizes, wanted, name, own, SHARE, lease_seconds, free
        )
        if granted is not None:
            return granted
    return await grant_in_transaction(transactions, limits, sizes, wanted, name, lease_seconds, free)


async def grant_in_transaction(
    transactions: WriteTransactions,
    limits: Sequence[Limit],
    sizes: Sequence[int],
    wanted: int,
    name: str,
    lease_seconds: float,
    free: int = 0,
) -> tuple[list[Standing], int]:
    """`grant` in a transaction that locks the limits' rows, then reads and adds."""
    ids = [limit.id for limit in limits]
    own = name[:_PREFIX_LENGTH]
    async with transactions.rows_locked_here(ids), transactions.begin() as conn:
        now = utcnow()
        await lock_limits(conn, ids)
        standings = await standings_at(conn, limits, now, create_missing=True)
        holders: dict[Any, set[str]] = {}
        count = wanted
        for limit_id, prefix in await _names(conn, ids, now):
            if prefix.startswith(RECLAIM):
                count = 0
            holders.setdefault(limit_id, set()).add(prefix)
        for standing, size in zip(standings, sizes, strict=True):
            share = len(holders.get(standing.limit.id, set()) | {own})
            size = max(size, 1)
            count = min(count, (standing.remaining + free * size) // (SHARE * share * size) - free)
        if count > 0:
            until = now + timedelta(seconds=lease_seconds)
            rows = [
                {"b_limit": limit_id, "b_name": name, "b_amount": count * size, "b_until": until}
                for limit_id, size in zip(ids, sizes, strict=True)
            ]
            await conn.execute(_add(conn.dialect.name), rows)
    return standings, max(count, 0)


async def draw(conn: LedgerConnection, parts: Sequence[Part]) -> None:
    """Takes each part's amount from its allowance row: what settled calls used, or a free part that
    goes back while the allowance's calls still run."""
    if parts:
        statement = _draw(conn.dialect.name)
        await conn.execute(statement, [{"b_limit": i, "b_name": n, "b_amount": a} for i, n, a in parts])


async def drop(conn: LedgerConnection, parts: Sequence[Part]) -> None:
    """Deletes rows by limit and name: an idle allowance given back whole, settled calls' records."""
    for start in range(0, len(parts), BATCH):
        chunk = parts[start : start + BATCH]
        await conn.execute(_DROP, [{"b_limit": limit_id, "b_name": name} for limit_id, name, _ in chunk])


async def renew(conn: LedgerConnection, ids: Sequence[uuid.UUID], process: str, seconds: float) -> None:
    """Extends every row of this process on these limits (allowances and records) by a lease from now."""
    if ids:
        until = utcnow() + timedelta(seconds=seconds)
        parameters = {"b_limits": list(ids), "b_prefix": prefix_of(process) + "%", "b_until": until}
        await conn.execute(_RENEW, parameters)


Records = tuple[uuid.UUID, str, list[object]]  # a row of running calls' records: (limit, name, records)


_ABSENT = object()


def listing(records: Sequence[object]) -> dict[str, object]:
    """A records row's `call`: the fields its calls all have alike once, each call's others in its
    list. The calls starting together are mostly one caller's on one model, so a row stays small:
    written whole, sixteen records took three 4 KB pages (two of them overflow pages) per row."""
    if len(records) < 2 or not all(isinstance(record, dict) for record in records):
        return {CALLS: list(records)}
    dicts = cast(Sequence[dict[str, object]], records)
    first, rest = dicts[0], dicts[1:]
    shared: dict[str, object] = {}
    for key, value in first.items():
        for other in rest:
            # Mostly the very same object (the caller's, the credential's, the model's): `is` is
            # decided in C, where a UUID's == (or its hash) runs Python.
            found = other.get(key, _ABSENT)
            if found is not value and found != value:
                break
        else:
            shared[key] = value
    keys = first.keys()
    if all(other.keys() == keys for other in rest):  # recovery records all have the same fields
        own = [key for key in keys if key not in shared]
        calls = [{key: record[key] for key in own} for record in dicts]
    else:
        calls = [{key: value for key, value in record.items() if key not in shared} for record in dicts]
    return {SHARED: shared, CALLS: calls}


def listed_calls(call: dict[str, Any]) -> list[Any]:
    """The records a records row lists, each whole (`listing`). A row of another shape gives what it
    has, for recovery to find unreadable."""
    listed = call.get(CALLS)
    if not isinstance(listed, list):
        return []
    shared = call.get(SHARED)
    if not isinstance(shared, dict):
        return listed
    return [{**shared, **one} if isinstance(one, dict) else one for one in listed]


async def record_calls(conn: LedgerConnection, batches: Sequence[Records], seconds: float) -> None:
    """Leaves running calls' records on rows (limit, row name, records), leased like the allowance:
    should this process die, recovery writes the calls' `abandoned` records from them."""
    if batches:
        until = utcnow() + timedelta(seconds=seconds)
        rows = [
            {"limit_id": i, "call_id": n, "amount": 0, "lease_until": until, "call": listing(r)}
            for i, n, r in batches
        ]
        await conn.execute(_RECORD, rows)


async def rewrite_records(
    conn: LedgerConnection, limit_id: uuid.UUID, name: str, records: list[object]
) -> None:
    """A row of running calls' records written again whole (one of its calls moved on to another attempt)."""
    await conn.execute(
        update(_HOLDS)
        .where(_HOLDS.c.limit_id == limit_id, _HOLDS.c.call_id == name)
        .values(call=listing(records))
    )


# PostgreSQL: the rows in one statement on a driver connection of the process's own, committed by
# itself: one round trip, where a transaction takes three (BEGIN, the insert, COMMIT). The rows of
# calls that have all settled go in the same statement.
_RECORD_NOW = (
    "WITH gone AS (DELETE FROM limit_holds h USING unnest($5::uuid[], $6::text[]) AS g(limit_id, call_id) "
    "WHERE h.limit_id = g.limit_id AND h.call_id = g.call_id) "
    "INSERT INTO limit_holds (limit_id, call_id, amount, lease_until, call) "
    "SELECT r.limit_id, r.call_id, 0, $4, r.call::json "
    "FROM unnest($1::uuid[], $2::text[], $3::text[]) AS r(limit_id, call_id, call)"
)


async def record_calls_now(
    transactions: WriteTransactions, batches: Sequence[Records], seconds: float, gone: Sequence[Part] = ()
) -> None:
    """`record_calls` in a transaction of its own: running calls' records, left before they go on.
    The rows in `gone` (their calls have all settled) are deleted with it, rather than at the next
    upkeep: every reservation and grant sums its limits' rows, a records row's list included, and
    a busy process leaves hundreds between two upkeeps."""
    until = utcnow() + timedelta(seconds=seconds)
    if transactions.dialect_name == "postgresql":
        async with transactions.driver_connection() as driver:
            await driver.execute(
                _RECORD_NOW,
                [limit_id for limit_id, _, _ in batches],
                [name for _, name, _ in batches],
                [json_text(listing(records)) for _, _, records in batches],
                until,
                [limit_id for limit_id, _, _ in gone],
                [name for _, name, _ in gone],
            )
        return
    async with transactions.begin() as conn:
        await drop(conn, gone)
        await record_calls(conn, batches, seconds)


async def reclaimed(conn: LedgerConnection, now: datetime) -> set[Any]:
    """The limits on which a process asked for free parts of allowances back."""
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
