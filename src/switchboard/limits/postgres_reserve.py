"""PostgreSQL's reservation in one or two round trips (SPEC §13), with migration 0012's function,
and an allowance's grant in one, with migration 0020's.

`switchboard_reserve` without needs only reads; with them it locks the limits, reads again and holds
the needs only if each still fits, all in one statement. `switchboard_grant` locks, reads and adds
to an allowance's rows as allowance_rows.grant does. The locked transactions (ledger.reserve,
allowance_rows.grant) remain for what these cannot decide: a calendar window without its counter yet.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from switchboard.db.engine import json_text
from switchboard.db.write_transaction import WriteTransactions
from switchboard.errors import LimitRefused
from switchboard.kit.clock import utcnow
from switchboard.limits.ledger import Planner, Standing
from switchboard.limits.rules import Limit, refill_rate, window_start

_RESERVE_TRIES = 3
_ARRAYS = ("uuid", "timestamptz", "float8", "bigint", "bigint")  # ids, starts, rates, amounts, needs


def _arguments(kinds: Sequence[str], count: int, scalars: int) -> list[str]:
    """A function's arguments: an array of `count` elements per kind, each element a parameter of its
    own (asyncpg encodes a scalar in C, an array through several Python-level checks per element),
    then `scalars` plain parameters."""
    arguments, number = [], 0
    for kind in kinds:
        arguments.append("ARRAY[" + ", ".join(f"${number + i + 1}::{kind}" for i in range(count)) + "]")
        number += count
    return arguments + [f"${number + i + 1}" for i in range(scalars)]


@functools.cache
def _reserve_sql(count: int, holding: bool) -> str:
    """The function's call for `count` limits (without needs: it only reads)."""
    arguments = _arguments(_ARRAYS if holding else _ARRAYS[:-1], count, 4)
    if not holding:
        arguments.insert(len(_ARRAYS) - 1, "NULL::bigint[]")
    call = f"switchboard_reserve({', '.join(arguments)})"
    return f"SELECT limit_id, used, reserved, counted, admitted FROM {call}"  # noqa: S608 (placeholders only)


async def reserve_in_one_statement(
    transactions: WriteTransactions,
    limits: Sequence[Limit],
    plan: Planner,
    call_id: str,
    call: object | None,  # kept as JSON, for recovery
    lease_seconds: float,
) -> dict[uuid.UUID, int] | None:
    """One or two round trips where the locked transaction takes five: decide here on what these
    limits had at their last reservation on this process (or on a fresh read), then hold if every
    need still fits (else decide again on what the function saw). None when a calendar window has no
    counter yet: the locked transaction counts its records."""
    now = utcnow()
    ids = [limit.id for limit in limits]
    starts = [window_start(limit.window, now) for limit in limits]
    rates = [refill_rate(limit) for limit in limits]
    amounts = [limit.amount for limit in limits]
    lease_until = now + timedelta(seconds=lease_seconds)
    record = json_text(call) if call is not None else None
    key = tuple(ids)

    def standings(rows: Sequence[Any]) -> list[Standing]:
        return [
            Standing(limit, row["used"], row["reserved"]) for limit, row in zip(limits, rows, strict=True)
        ]

    known = (*ids, *starts, *rates, *amounts)
    holding, reading = _reserve_sql(len(limits), True), _reserve_sql(len(limits), False)
    async with transactions.driver_connection() as driver:
        rows = _LAST_SEEN.get(key)
        if rows is not None:
            try:
                needs = plan(standings(rows))
            except LimitRefused:
                rows = None  # refused on old figures: decide on a fresh read
            else:
                asked = [needs[i] for i in ids]
                rows = await driver.fetch(holding, *known, *asked, call_id, record, lease_until, now)
                _remember(key, rows)
                if rows[0]["admitted"]:
                    # Decided again on what the function saw, for the headers: the same needs
                    # unless the old figures set a different output cap, which is then undone.
                    if all(row["counted"] for row in rows) and plan(standings(rows)) == needs:
                        return needs
                    await driver.execute(_UNHOLD, ids, call_id)
        if rows is None:
            rows = await driver.fetch(reading, *known, call_id, None, lease_until, now)
            _remember(key, rows)
        for _ in range(_RESERVE_TRIES):
            if not all(row["counted"] for row in rows):
                return None
            needs = plan(standings(rows))
            asked = [needs[i] for i in ids]
            rows = await driver.fetch(holding, *known, *asked, call_id, record, lease_until, now)
            _remember(key, rows)
            if rows[0]["admitted"]:
                return needs
    return None  # others kept changing what is left: the locked transaction decides


# What each set of limits had at its last reservation here (the function's rows): the next call's
# first decision, which the function then checks under the locks. Bounded: callers' limits vary.
_LAST_SEEN: dict[tuple[uuid.UUID, ...], Sequence[Any]] = {}
_LAST_SEEN_MAX = 10_000
_UNHOLD = "DELETE FROM limit_holds WHERE limit_id = ANY($1::uuid[]) AND call_id = $2"


def _remember(key: tuple[uuid.UUID, ...], rows: Sequence[Any]) -> None:
    if len(_LAST_SEEN) >= _LAST_SEEN_MAX:
        _LAST_SEEN.clear()
    _LAST_SEEN[key] = rows


@functools.cache
def _grant_sql(count: int) -> str:
    """`switchboard_grant` for `count` limits: the sizes in place of the needs."""
    call = f"switchboard_grant({', '.join(_arguments(_ARRAYS, count, 7))})"
    return f"SELECT used, reserved, counted, granted FROM {call}"  # noqa: S608 (placeholders only)


async def grant_in_one_statement(
    transactions: WriteTransactions,
    limits: Sequence[Limit],
    sizes: Sequence[int],
    wanted: int,
    name: str,
    own: str,
    share: int,
    lease_seconds: float,
    free: int,
) -> tuple[list[Standing], int] | None:
    """allowance_rows.grant in one round trip: the standings read before the grant and how many worst
    cases were added. None when a calendar window has no counter yet (nothing was granted)."""
    now = utcnow()
    async with transactions.driver_connection() as driver:
        rows = await driver.fetch(
            _grant_sql(len(limits)),
            *[limit.id for limit in limits],
            *[window_start(limit.window, now) for limit in limits],
            *[refill_rate(limit) for limit in limits],
            *[limit.amount for limit in limits],
            *sizes,
            wanted,
            free,
            share,
            name,
            own,
            now + timedelta(seconds=lease_seconds),
            now,
        )
    if not rows[0]["counted"]:
        return None
    pairs = zip(limits, rows, strict=True)
    return [Standing(limit, row["used"], row["reserved"]) for limit, row in pairs], rows[0]["granted"]
