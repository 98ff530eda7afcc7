"""The rollups the usage writer keeps, per 5 minutes, hour and UTC day, in the transaction of the records.

Every batch adds to the three tiers exactly the records it inserted, once:

- PostgreSQL: a single statement inserts the records (`unnest` over one array per column) and,
  from what that insert RETURNs, upserts the sums per key into every tier. A record already stored
  (a batch retried after its commit's acknowledgement was lost) is skipped by the insert, so it is
  never counted twice.
- SQLite: the batch is summed per key and 5 minutes in Python, those sums per hour and per day, and
  each tier is upserted with one `executemany` after the records' insert. When the insert's row
  count says some record was already there, the transaction is rolled back with `RecordsExisted`;
  the writer then drops the stored records and writes the rest.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect

from switchboard.db.batch_insert import Row
from switchboard.db.driver_statements import DriverStatement, driver_ready
from switchboard.db.write_transaction import LedgerConnection
from switchboard.metering.models import (
    UsageDailyRollupRow,
    UsageFiveMinuteRollupRow,
    UsageRecordRow,
    UsageRollupRow,
)

RECORDS = cast(Table, UsageRecordRow.__table__)
FIVE_MINUTES = cast(Table, UsageFiveMinuteRollupRow.__table__)
ROLLUPS = cast(Table, UsageRollupRow.__table__)
DAILY = cast(Table, UsageDailyRollupRow.__table__)
# Each tier, finest first: its table and the period its `hour` column starts.
TIERS = ((FIVE_MINUTES, "5min"), (ROLLUPS, "hour"), (DAILY, "day"))
# What a rollup row is the sum for: one period of one economy, per user, room, agent, model, status
# and API key (limits on an API key start from the rollups too).
KEY = ("economy_id", "hour", "user_id", "room_id", "agent_id", "provider", "model", "status", "api_key_id")
SUMS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "reasoning_tokens",
    "cost",
    "cache_write_tokens",
)
MEASURES = ("requests", *SUMS, "unpriced_requests")
NO_ROOM = uuid.UUID(int=0)
NO_AGENT = ""
NO_API_KEY = NO_ROOM  # a call made with a token, not an API key
# The record columns a rollup row is made of.
_READ = ("economy_id", "occurred_at", "user_id", "room_id", "agent_id", "provider", "model", "status",
         "api_key_id", *SUMS, "priced")  # fmt: skip


class RecordsExisted(Exception):
    """Some record of the batch is stored already; nothing of the batch was committed."""


def five_minutes_of(moment: datetime) -> datetime:
    moment = moment.astimezone(UTC)
    return moment.replace(minute=moment.minute - moment.minute % 5, second=0, microsecond=0)


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(moment: datetime) -> datetime:
    return hour_of(moment).replace(hour=0)


def coarser(deltas: list[dict[str, Any]], period_of: Callable[[datetime], datetime]) -> list[dict[str, Any]]:
    """A coarser tier's deltas from a finer one's (`period_of`: `hour_of` or `day_of`)."""
    if len(deltas) == 1:  # the usual batch at low concurrency: one key, one period
        return [dict(deltas[0], hour=period_of(deltas[0]["hour"]))]
    periods: dict[tuple[Any, ...], dict[str, Any]] = {}
    for delta in deltas:
        key = tuple(period_of(delta[name]) if name == "hour" else delta[name] for name in KEY)
        found = periods.get(key)
        if found is None:
            periods[key] = dict(delta, hour=key[1])
            continue
        for name in MEASURES:
            found[name] += delta[name]
    return list(periods.values())


def sum_rows(rows: Sequence[Row], positions: Sequence[int]) -> list[dict[str, Any]]:
    """The batch's 5-minute deltas: one dict per key, the records' values at `positions` (`_READ` order)."""
    economy, when, user, room, agent, provider, model, status, api_key, *sums, priced = positions
    totals: dict[tuple[Any, ...], list[int]] = {}
    for row in rows:
        key = (
            row[economy],
            five_minutes_of(cast(datetime, row[when])),
            row[user],
            row[room] if row[room] is not None else NO_ROOM,
            row[agent] if row[agent] is not None else NO_AGENT,
            row[provider],
            row[model],
            row[status],
            row[api_key] if row[api_key] is not None else NO_API_KEY,
        )
        found = totals.get(key)
        if found is None:
            found = totals[key] = [0] * len(MEASURES)
        found[0] += 1
        for index, position in enumerate(sums, start=1):
            found[index] += cast(int, row[position])
        if not row[priced]:
            found[-1] += 1
    return [
        dict(zip(KEY, key, strict=True)) | dict(zip(MEASURES, values, strict=True))
        for key, values in totals.items()
    ]


def _sqlite_upsert(table: Table) -> Any:
    statement = sqlite_insert(table)
    return statement.on_conflict_do_update(
        index_elements=list(KEY),
        set_={name: table.c[name] + statement.excluded[name] for name in MEASURES},
    )


_SQLITE_UPSERTS = tuple(driver_ready(_sqlite_upsert(table)) for table, _ in TIERS)


def tier_deltas(fine: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], ...]:
    """Each tier's deltas, in `TIERS` order, from the 5-minute ones."""
    hours = coarser(fine, hour_of)
    return fine, hours, coarser(hours, day_of)


class RollupKeeper:
    """The rollup side of the writer's inserts, for records given as tuples in `columns` order."""

    def __init__(self, columns: Sequence[str], dialect: Dialect) -> None:
        missing = set(_READ) - set(columns)
        if missing:
            raise ValueError(f"rollups need the record columns {sorted(missing)}")
        self._columns = tuple(columns)
        self._positions = [self._columns.index(name) for name in _READ]
        self._driver_upserts: tuple[DriverStatement, ...] | None = None
        # PostgreSQL: the single insert-and-roll-up statement, in place of the plain insert.
        self.postgres: PostgresRecordsAndRollups | None = None
        if dialect.name == "postgresql":
            self.postgres = PostgresRecordsAndRollups(self._columns, dialect)

    def deltas(self, rows: Sequence[Row]) -> list[dict[str, Any]]:
        return sum_rows(rows, self._positions)

    def after_sqlite_insert(self, connection: sqlite3.Connection, rows: Sequence[Row], inserted: int) -> None:
        """Called by the batch insert inside its transaction, with the number of rows it inserted."""
        if inserted != len(rows):
            raise RecordsExisted
        if self._driver_upserts is None:
            dialect = sqlite.dialect()
            self._driver_upserts = tuple(DriverStatement(upsert, dialect) for upsert in _SQLITE_UPSERTS)
        for upsert, deltas in zip(self._driver_upserts, tier_deltas(self.deltas(rows)), strict=True):
            upsert.run(connection, deltas)

    async def insert_in(self, conn: LedgerConnection, insert: Any, rows: Sequence[Row]) -> None:
        """Records and their rollups inside the caller's transaction (the writer's settlement path)."""
        if self.postgres is not None:
            await conn.execute(self.postgres.text_statement, self.postgres.named_parameters(rows))
            return
        result = await conn.execute(insert, [dict(zip(self._columns, row, strict=True)) for row in rows])
        if result.rowcount != len(rows):
            raise RecordsExisted
        for upsert, deltas in zip(_SQLITE_UPSERTS, tier_deltas(self.deltas(rows)), strict=True):
            await conn.execute(upsert, deltas)


def period_start(unit: str, dialect: str, column: str = "occurred_at") -> str:
    """SQL for the first moment of the period (`TIERS`' unit) a record's time falls in, as `hour` holds it."""
    if dialect == "postgresql":
        if unit == "5min":  # (date_bin would do it from PostgreSQL 14 on)
            minute = f"extract(minute FROM {column} AT TIME ZONE 'UTC')::int"
            return f"(date_trunc('minute', {column}, 'UTC') - ({minute} % 5) * interval '1 minute')"
        return f"date_trunc('{unit}', {column}, 'UTC')"
    # SQLite keeps "YYYY-MM-DD HH:MM:SS.ffffff" text: the period's start is a prefix and zeros.
    if unit == "5min":
        tens, units = f"substr({column}, 1, 15)", f"CAST(substr({column}, 16, 1) AS INTEGER)"
        return f"({tens} || ({units} / 5 * 5) || ':00.000000')"
    if unit == "hour":
        return f"(substr({column}, 1, 13) || ':00:00.000000')"
    return f"(substr({column}, 1, 10) || ' 00:00:00.000000')"


def _upsert_sql(table: Table, unit: str) -> str:
    """PostgreSQL: add the sums of `new` (the records just stored) per key and `unit` to `table`."""
    key = ", ".join(KEY)
    sums = ", ".join(f"sum({name})" for name in SUMS)
    updates = ", ".join(f"{name} = r.{name} + excluded.{name}" for name in MEASURES)
    return (
        f"INSERT INTO {table.name} AS r ({key}, {', '.join(MEASURES)}) "  # noqa: S608
        f"SELECT economy_id, {period_start(unit, 'postgresql')}, user_id, "
        f"coalesce(room_id, '{NO_ROOM}'::uuid), coalesce(agent_id, ''), provider, model, status, "
        f"coalesce(api_key_id, '{NO_API_KEY}'::uuid), count(*), {sums}, count(*) FILTER (WHERE NOT priced) "
        f"FROM new GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9 ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )


@dataclass(frozen=True)
class _Column:
    name: str
    array_type: str


class PostgresRecordsAndRollups:
    """`INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING RETURNING …`, summed into the rollups.

    One array parameter per column, so a batch of any size is one statement, one round trip, and
    the same prepared statement (asyncpg caches it) whatever the batch size.
    """

    def __init__(self, columns: Sequence[str], dialect: Dialect) -> None:
        self.columns = [
            _Column(name, RECORDS.c[name].type.dialect_impl(dialect).compile(dialect=dialect) + "[]")
            for name in columns
        ]
        self._processors = [
            RECORDS.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns
        ]
        self.sql = self._render([f"${index}::{c.array_type}" for index, c in enumerate(self.columns, 1)])
        self.text_statement = text(
            self._render([f"CAST(:c{index} AS {c.array_type})" for index, c in enumerate(self.columns)])
        )

    def _render(self, arrays: list[str]) -> str:
        names = ", ".join(c.name for c in self.columns)
        fine, hourly, daily = (_upsert_sql(table, unit) for table, unit in TIERS)
        # Only the tables' own column names go into the text; every value is a parameter. The
        # upserts read what the records' insert returned: the rows it stored, no others (and so may
        # a limits settlement put in front of it: settlement.postgres.SettlingStatement).
        return (
            f"WITH new AS (INSERT INTO usage_records ({names}) SELECT * FROM unnest({', '.join(arrays)}) "  # noqa: S608
            f"ON CONFLICT DO NOTHING RETURNING id, {', '.join(_READ)}), fine AS ({fine}), "
            f"hourly AS ({hourly}) {daily}"
        )

    def parameters(self, rows: Sequence[Row]) -> list[Row]:
        """One argument list (asyncpg's `execute(sql, *args)`): each column's values as an array."""
        arrays: list[list[object]] = [[] for _ in self.columns]
        for row in rows:
            for values, value in zip(arrays, row, strict=True):
                values.append(value)
        for index, processor in enumerate(self._processors):
            if processor is not None:
                arrays[index] = [processor(value) for value in arrays[index]]
        return [arrays]

    def named_parameters(self, rows: Sequence[Row]) -> dict[str, object]:
        return {f"c{index}": values for index, values in enumerate(self.parameters(rows)[0])}
