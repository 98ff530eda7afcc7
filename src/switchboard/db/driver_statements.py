"""Statements the ledger runs on every call under a limit, compiled once for SQLite's own driver.

SQLAlchemy spends most of a small statement's time on what does not change between executions
(execution context, parameter bookkeeping, result metadata). A statement marked with `driver_ready`
is compiled once per dialect; each execution then only converts its parameters and rows with the
very processors SQLAlchemy would apply, so what is stored and read back is the same.
"""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Uuid
from sqlalchemy.engine import Dialect

from switchboard.db.types import UTCDateTime

S = TypeVar("S")
_READY: dict[int, object] = {}  # id → the statement itself, kept so that its id is never reused


def driver_ready(statement: S) -> S:
    """Marks a statement built once (module level, or cached per shape) for the driver path."""
    _READY[id(statement)] = statement
    return statement


class DriverResult:
    """What the ledger reads of a result: rows (by index or name), `rowcount`, `scalar()`."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def all(self) -> list[Any]:
        return list(self._rows)

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None


_Processor = Callable[[Any], Any]


class _Remembered:
    """A processor of immutable values (times, UUIDs) that remembers its recent conversions by the
    object's identity: a limit's id, a window's start or a lease given again, as the same object, is
    not converted again, even when the rows of one statement alternate between a few of them. The
    lookup is inlined in the generated values function (`_values_builder`); `convert` is the miss."""

    __slots__ = ("known", "process")

    KEEP = 64  # conversions remembered; past that the memory starts over

    def __init__(self, process: _Processor) -> None:
        self.process = process
        # id -> (the object, its conversion): holding the object keeps its id from being reused. Each
        # entry is set whole, so a reader on another thread sees an old entry or a new one.
        self.known: dict[int, tuple[Any, Any]] = {}

    def convert(self, value: Any) -> Any:
        converted = self.process(value)
        known = self.known
        if len(known) >= self.KEEP:
            known.clear()
        known[id(value)] = (value, converted)
        return converted


def _remembering(kind: Any, process: _Processor | None) -> _Processor | _Remembered | None:
    if process is None or not isinstance(kind, (UTCDateTime, Uuid)):
        return process
    return _Remembered(process)


def _values_builder(
    order: tuple[str, ...], processors: Sequence[_Processor | _Remembered | None], defaults: Mapping[str, Any]
) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """A function from a statement's named parameters to its positional values, each converted by its
    processor: generated once per statement, so that a row costs one tuple display rather than a loop
    with a lookup, a test and a call per column (every settlement and reservation binds a dozen)."""
    scope: dict[str, Any] = {}
    items = []
    for index, name in enumerate(order):
        if name in defaults:
            scope[f"d{index}"] = defaults[name]
            read = f"p.get({name!r}, d{index})"
        else:
            read = f"p[{name!r}]"  # a missing parameter is a KeyError, as before
        processor = processors[index]
        if processor is None:
            items.append(read)
        elif isinstance(processor, _Remembered):
            scope[f"k{index}"], scope[f"f{index}"] = processor.known, processor.convert
            hit = f"q[1] if (q := k{index}.get(id(v))) is not None and q[0] is v else f{index}(v)"
            items.append(f"(None if (v := {read}) is None else ({hit}))")
        else:
            scope[f"f{index}"] = processor
            items.append(f"(None if (v := {read}) is None else f{index}(v))")
    source = f"def values(p):\n    return ({', '.join(items)}{',' if len(items) == 1 else ''})\n"
    exec(compile(source, "<driver statement values>", "exec"), scope)  # noqa: S102 - names are ours
    values: Callable[[Mapping[str, Any]], tuple[Any, ...]] = scope["values"]
    return values


class DriverStatement:
    def __init__(self, statement: Any, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql: str = compiled.string
        self._order: tuple[str, ...] = tuple(compiled.positiontup or ())
        binds = compiled.binds
        self._defaults = {
            name: binds[name].effective_value for name in self._order if not binds[name].required
        }
        processors: Mapping[str, _Processor] = compiled._bind_processors
        self._values = _values_builder(
            self._order,
            [_remembering(binds[name].type, processors.get(name)) for name in self._order],
            self._defaults,
        )
        columns = compiled._result_columns
        row_type: Any = (
            namedtuple("Row", [entry.keyname for entry in columns], rename=True) if columns else None
        )  # type: ignore[misc]
        self._make_row: Callable[[list[Any]], Any] | None = row_type._make if row_type is not None else None
        readers = [entry.type._cached_result_processor(dialect, None) for entry in columns]
        self._readers = [(index, read) for index, read in enumerate(readers) if read is not None]

    def run(self, connection: sqlite3.Connection, parameters: Any) -> DriverResult:
        if isinstance(parameters, (list, tuple)):  # many rows (a concrete type: the check is cheap)
            cursor = connection.executemany(self.sql, [self._values(p) for p in parameters])
        else:
            cursor = connection.execute(self.sql, self._values(parameters or {}))
        try:
            rows: list[Any] = []
            make = self._make_row
            if make is not None:
                readers = self._readers
                for raw in cursor.fetchall():
                    values = list(raw)
                    for index, read in readers:
                        values[index] = read(values[index])
                    rows.append(make(values))
            return DriverResult(rows, cursor.rowcount)
        finally:
            cursor.close()


class DriverStatements:
    """Per connection's dialect: the compiled form of each marked statement, made on first use."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._compiled: dict[int, DriverStatement] = {}

    def get(self, statement: object) -> DriverStatement | None:
        key = id(statement)
        found = self._compiled.get(key)
        if found is None and _READY.get(key) is statement:
            found = self._compiled[key] = DriverStatement(statement, self._dialect)
        return found
