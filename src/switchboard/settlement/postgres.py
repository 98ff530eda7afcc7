"""PostgreSQL: a batch's limits settlement put in front of the records' own statement (one round trip)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from switchboard.limits.rules import refill_rate, window_start
from switchboard.metering.rollups import PostgresRecordsAndRollups
from switchboard.settlement.limit_counters import Actual


class SettlingStatement:
    """PostgreSQL: a batch's records and rollups statement with its limits' settlement in front, as
    one statement and one round trip (its own transaction). The counters add only what the records
    the statement stored say (`new`, the records' insert, returns their ids): a batch retried after
    its commit went through counts nothing twice. `records` is the writer's insert-and-roll-up
    statement (metering.rollups.PostgresRecordsAndRollups); each actual comes with its record's id.
    `returned` (record id, limit id, allowance, amount):
    what goes back of allowances with a settled call (`Settlement.returned`), drawn with the usage
    drawn from the same rows, once per stored record like it.
    """

    def __init__(
        self,
        records: PostgresRecordsAndRollups,
        actuals: Sequence[tuple[uuid.UUID, Actual]],
        now: datetime,
        returned: Sequence[tuple[uuid.UUID, uuid.UUID, str, int]] = (),
    ) -> None:
        self._records = records
        self._actuals = actuals
        self._now = now
        self._returned = returned
        # The records' statement takes one array per column: the settlement's values come after them.
        self.sql = _settling_sql(records.sql, len(records.columns) + 1, len(actuals), len(returned))

    def parameters(self, rows: Sequence[Any]) -> list[Any]:
        arguments = list(self._records.parameters(rows)[0])
        actuals = self._actuals
        arguments += [actual.limit.id for _, actual in actuals]
        arguments += [actual.call_id for _, actual in actuals]
        arguments += [record_id for record_id, _ in actuals]
        arguments += [window_start(actual.limit.window, actual.at) for _, actual in actuals]
        arguments += [actual.amount for _, actual in actuals]
        arguments += [refill_rate(actual.limit) for _, actual in actuals]
        arguments += [actual.drawn for _, actual in actuals]
        arguments.append(self._now)
        for column in range(4):
            arguments += [part[column] for part in self._returned]
        return [arguments]


# limits, calls, records, window starts, amounts, refill rates, drawn from an allowance
_COLUMNS = ("uuid", "text", "uuid", "timestamptz", "bigint", "float8", "bool")
# what goes back: records, limits, allowances, amounts
_RETURNED = ("uuid", "uuid", "text", "bigint")


def _array(start: int, count: int, kind: str) -> str:
    elements = ", ".join(f"${start + index}::{kind}" for index in range(count))
    return f"ARRAY[{elements}]::{kind}[]"  # typed even when empty


@functools.cache
def _settling_sql(records_sql: str, first: int, count: int, returned: int) -> str:
    """The settlement's arrays are built in SQL from one parameter per element, as the reservation's
    are (limits.postgres_reserve): asyncpg encodes a scalar in C, an array with Python checks per
    element. One prepared statement per number of holds settled and parts returned."""
    arrays = [_array(first + column * count, count, kind) for column, kind in enumerate(_COLUMNS)]
    limits, calls, records, starts, amounts, rates, drawn = arrays
    at = first + len(_COLUMNS) * count
    now = f"${at}"
    at += 1
    back = [_array(at + column * returned, returned, kind) for column, kind in enumerate(_RETURNED)]
    refill = (
        "LEAST(floor(GREATEST(extract(epoch FROM excluded.updated_at - u.updated_at), 0) * excluded.rate),"
        " u.used)::bigint"
    )
    # Only parameter numbers go into the text; every value is an argument.
    settlement = (
        f"released AS (DELETE FROM limit_holds h USING unnest({limits}, {calls}, {drawn}) "  # noqa: S608
        "AS r(limit_id, call_id, drawn) "
        "WHERE NOT r.drawn AND h.limit_id = r.limit_id AND h.call_id = r.call_id), "
        # A call admitted on an allowance: what it used is drawn from the allowance's row, once per
        # stored record (limits/allowance_rows.py).
        # And what goes back of allowances, in the same update: a statement changes a row once.
        "drawn_from AS (UPDATE limit_holds h SET amount = GREATEST(h.amount - d.used, 0) FROM ("
        "SELECT s.limit_id, s.call_id, sum(s.used)::bigint AS used FROM ("
        "SELECT s.record_id, s.limit_id, s.call_id, s.used "
        f"FROM unnest({records}, {limits}, {calls}, {amounts}, {drawn}) "
        "AS s(record_id, limit_id, call_id, used, drawn) WHERE s.drawn UNION ALL "
        f"SELECT * FROM unnest({back[0]}, {back[1]}, {back[2]}, {back[3]})"
        ") AS s(record_id, limit_id, call_id, used) "
        "JOIN new ON new.id = s.record_id GROUP BY s.limit_id, s.call_id) d "
        "WHERE h.limit_id = d.limit_id AND h.call_id = d.call_id), "
        "counted AS (INSERT INTO limit_usage AS u (limit_id, window_start, used, updated_at, rate) "
        f"SELECT s.limit_id, s.window_start, sum(s.used)::bigint, {now}::timestamptz, max(s.rate) "
        f"FROM unnest({records}, {limits}, {starts}, {amounts}, {rates}) "
        "AS s(record_id, limit_id, window_start, used, rate) "
        "JOIN new ON new.id = s.record_id GROUP BY s.limit_id, s.window_start "
        "ORDER BY s.limit_id, s.window_start "
        "ON CONFLICT (limit_id, window_start) DO UPDATE SET "
        f"used = GREATEST(u.used - {refill}, 0) + excluded.used, "
        "updated_at = excluded.updated_at, rate = excluded.rate)"
    )
    assert records_sql.startswith("WITH ")
    # RECURSIVE only lets `counted` name `new`, which the records' statement defines after it.
    return f"WITH RECURSIVE {settlement}, {records_sql.removeprefix('WITH ')}"
