"""Statements the ledger runs on every call under a limit, compiled once for SQLite's own driver.

SQLAlchemy spends most of a small statement's time on what does not change between executions
(execution context, parameter bookkeeping, result metadata). A statement marked with `driver_ready`
is compiled once per dialect; each execution then only converts its parameters and rows with the
very processors SQLAlchemy would apply (`TypeEngine.dialect_impl(...).bind_processor` and
`result_processor`, its public API), so what is stored and read back is the same.
"""

from __future__ import annotations

import operator
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
    """The recent conversions of a processor of immutable values (times, UUIDs), by the object's
    identity: a limit's id, a window's start or a lease given again, as the same object, is not
    converted again, even when the rows of one statement alternate between a few of them. The lookup
    is made in `_Values.__call__`; `convert` is the miss."""

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


# A parameter's position, what its type remembers (None: nothing), and its conversion.
_Converter = tuple[int, dict[int, tuple[Any, Any]] | None, _Processor]


def _converter(index: int, kind: Any, dialect: Dialect) -> _Converter | None:
    """What SQLAlchemy applies to a bound value of this type on this dialect (None: nothing)."""
    process: _Processor | None = kind.dialect_impl(dialect).bind_processor(dialect)
    if process is None:
        return None
    if not isinstance(kind, (UTCDateTime, Uuid)):
        return index, None, process
    remembered = _Remembered(process)
    return index, remembered.known, remembered.convert


class _Values:
    """A statement's named parameters as its positional values, each converted by its type's bind
    processor. The names are read in one C call (`itemgetter`) and only the columns that need a
    conversion (times, ids, JSON: a few of the dozen a settlement binds) are visited in Python."""

    __slots__ = ("_converters", "_defaults", "_one", "_read")

    def __init__(
        self, order: tuple[str, ...], converters: Sequence[_Converter | None], defaults: Mapping[str, Any]
    ) -> None:
        self._read: Callable[[Mapping[str, Any]], Any] | None = operator.itemgetter(*order) if order else None
        self._one = len(order) == 1  # itemgetter of one name gives the value itself, not a tuple
        self._converters = tuple(convert for convert in converters if convert is not None)
        self._defaults = dict(defaults)

    def __call__(self, parameters: Mapping[str, Any]) -> Sequence[Any]:
        read = self._read
        if read is None:
            return ()
        if self._defaults:  # a missing parameter with no default is a KeyError, as in SQLAlchemy
            parameters = {**self._defaults, **parameters}
        if self._one:
            values = [read(parameters)]
        elif self._converters:
            values = list(read(parameters))
        else:
            return read(parameters)  # type: ignore[no-any-return]
        for index, known, convert in self._converters:
            value = values[index]
            if value is None:
                continue
            if known is not None:
                hit = known.get(id(value))
                if hit is not None and hit[0] is value:
                    values[index] = hit[1]
                    continue
            values[index] = convert(value)
        return values


class DriverStatement:
    """A statement compiled once for a dialect (SQLAlchemy's public compiler output: its SQL, the
    positional order of its parameters, their binds) and run on the sqlite3 connection itself, whose
    statement cache keeps it prepared across executions."""

    def __init__(self, statement: Any, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql: str = compiled.string
        order: tuple[str, ...] = tuple(compiled.positiontup or ())
        binds = compiled.binds
        defaults = {name: binds[name].effective_value for name in order if not binds[name].required}
        self._values = _Values(
            order, [_converter(i, binds[name].type, dialect) for i, name in enumerate(order)], defaults
        )
        columns = list(statement.exported_columns.items())
        row_type: Any = namedtuple("Row", [key for key, _ in columns], rename=True) if columns else None  # type: ignore[misc]
        self._make_row: Callable[[list[Any]], Any] | None = row_type._make if row_type is not None else None
        readers = [column.type.dialect_impl(dialect).result_processor(dialect, None) for _, column in columns]
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
