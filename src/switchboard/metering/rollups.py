"""The rollups the usage writer keeps, per hour and per UTC day, in the transaction of the records.

Every batch adds to both tiers exactly the records it inserted, once:

- PostgreSQL: a single statement inserts the records (`unnest` over one array per column) and,
  from what that insert RETURNs, upserts the sums per key into both tiers. A record already stored
  (a batch retried after its commit's acknowledgement was lost) is skipped by the insert, so it is
  never counted twice.
- SQLite: the batch is summed per key in Python and upserted with one `executemany` per tier after
  the records' insert. When the insert's row count says some record was already there, the
  transaction is rolled back with `RecordsExisted`; the writer then drops the stored records and
  writes the rest.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
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
from switchboard.metering.models import UsageDailyRollupRow, UsageRecordRow, UsageRollupRow

RECORDS = cast(Table, UsageRecordRow.__table__)
ROLLUPS = cast(Table, UsageRollupRow.__table__)
DAILY = cast(Table, UsageDailyRollupRow.__table__)
# Each tier: its table and the PostgreSQL unit its `hour` column is truncated to.
TIERS = ((ROLLUPS, "hour"), (DAILY, "day"))
# What a rollup row is the sum for: one hour of one economy, per user, room, agent, model and status.
KEY = ("economy_id", "hour", "user_id", "room_id", "agent_id", "provider", "model", "status")
SUMS = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost")
MEASURES = ("requests", *SUMS, "unpriced_requests")
NO_ROOM = uuid.UUID(int=0)
NO_AGENT = ""
# The record columns a rollup row is made of.
_READ = ("economy_id", "occurred_at", "user_id", "room_id", "agent_id", "provider", "model", "status",
         *SUMS, "priced")  # fmt: skip


class RecordsExisted(Exception):
    """Some record of the batch is stored already; nothing of the batch was committed."""


def hour_of(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(moment: datetime) -> datetime:
    return hour_of(moment).replace(hour=0)


def by_day(hourly: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The daily tier's deltas from the hourly ones."""
    days: dict[tuple[Any, ...], dict[str, Any]] = {}
    for delta in hourly:
        key = tuple(day_of(delta[name]) if name == "hour" else delta[name] for name in KEY)
        found = days.get(key)
        if found is None:
            days[key] = dict(delta, hour=key[1])
            continue
        for name in MEASURES:
            found[name] += delta[name]
    return list(days.values())


def sum_rows(rows: Sequence[Row], positions: Sequence[int]) -> list[dict[str, Any]]:
    """The batch's rollup deltas: one dict per key, the records' values at `positions` (`_READ` order)."""
    economy, when, user, room, agent, provider, model, status, *sums, priced = positions
    totals: dict[tuple[Any, ...], list[int]] = {}
    for row in rows:
        key = (
            row[economy],
            hour_of(cast(datetime, row[when])),
            row[user],
            row[room] if row[room] is not None else NO_ROOM,
            row[agent] if row[agent] is not None else NO_AGENT,
            row[provider],
            row[model],
            row[status],
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


_SQLITE_UPSERT = driver_ready(_sqlite_upsert(ROLLUPS))
_SQLITE_DAILY_UPSERT = driver_ready(_sqlite_upsert(DAILY))


class RollupKeeper:
    """The rollup side of the writer's inserts, for records given as tuples in `columns` order."""

    def __init__(self, columns: Sequence[str], dialect: Dialect) -> None:
        missing = set(_READ) - set(columns)
        if missing:
            raise ValueError(f"rollups need the record columns {sorted(missing)}")
        self._columns = tuple(columns)
        self._positions = [self._columns.index(name) for name in _READ]
        self._driver_upserts: tuple[DriverStatement, DriverStatement] | None = None
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
            self._driver_upserts = (
                DriverStatement(_SQLITE_UPSERT, dialect),
                DriverStatement(_SQLITE_DAILY_UPSERT, dialect),
            )
        hourly = self.deltas(rows)
        self._driver_upserts[0].run(connection, hourly)
        self._driver_upserts[1].run(connection, by_day(hourly))

    async def insert_in(self, conn: LedgerConnection, insert: Any, rows: Sequence[Row]) -> None:
        """Records and their rollups inside the caller's transaction (the writer's settlement path)."""
        if self.postgres is not None:
            await conn.execute(self.postgres.text_statement, self.postgres.named_parameters(rows))
            return
        result = await conn.execute(insert, [dict(zip(self._columns, row, strict=True)) for row in rows])
        if result.rowcount != len(rows):
            raise RecordsExisted
        hourly = self.deltas(rows)
        await conn.execute(_SQLITE_UPSERT, hourly)
        await conn.execute(_SQLITE_DAILY_UPSERT, by_day(hourly))


def _upsert_sql(table: Table, unit: str) -> str:
    """PostgreSQL: add the sums of `new` (the records just stored) per key and `unit` to `table`."""
    key = ", ".join(KEY)
    sums = ", ".join(f"sum({name})" for name in SUMS)
    updates = ", ".join(f"{name} = r.{name} + excluded.{name}" for name in MEASURES)
    return (
        f"INSERT INTO {table.name} AS r ({key}, {', '.join(MEASURES)}) "  # noqa: S608
        f"SELECT economy_id, date_trunc('{unit}', occurred_at, 'UTC'), user_id, "
        f"coalesce(room_id, '{NO_ROOM}'::uuid), coalesce(agent_id, ''), provider, model, status, "
        f"count(*), {sums}, count(*) FILTER (WHERE NOT priced) "
        f"FROM new GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ON CONFLICT ({key}) DO UPDATE SET {updates}"
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
        hourly, daily = (_upsert_sql(table, unit) for table, unit in TIERS)
        # Only the tables' own column names go into the text; every value is a parameter. Both
        # upserts read what the records' insert returned: the rows it stored, no others.
        return (
            f"WITH new AS (INSERT INTO usage_records ({names}) SELECT * FROM unnest({', '.join(arrays)}) "  # noqa: S608
            f"ON CONFLICT DO NOTHING RETURNING {', '.join(_READ)}), hourly AS ({hourly}) {daily}"
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
