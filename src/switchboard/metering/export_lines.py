"""Export pages written in Python from the database's values, column by column.

On SQLite the cost of an export is Python's: about 0.15 µs for each value the driver hands over and
as much again to write it, while SQL functions are slow there (a quarter of a microsecond per call).
So the query hands over the values that differ on every record (ids, times, tokens) one by one, and
the columns that repeat from record to record (economy, user, room, agent, model, status, prices…)
as one `json_array(…)` per group: one value instead of a dozen, and a key under which the group's
text in the line is remembered, so that a record costs a dictionary lookup for all of them.
PostgreSQL writes the text of the values that differ itself (columns of kind "line") and hands over
each group as the text of a ROW(…), read back here once per distinct value.

A page is transposed into its columns, each column turned into its texts by a `map` (a memo's
lookup, `str`, or one small function for the values that differ), and the columns zipped back into
lines: the loops run in C, with no code generated. The bytes are those of the csv module and
pydantic + orjson (tests/metering/test_fast_export.py compares them on awkward records).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, NamedTuple

import orjson

# "line": text the database already wrote as it stands in the line (PostgreSQL's part of a line).
Kind = Literal["uuid", "text", "time", "bool", "int", "int_text", "line", "json"]
Source = Literal["sqlite", "postgresql"]
Format = Literal["csv", "ndjson"]
PageOf = Callable[[Sequence[Sequence[Any]]], bytes]

_CSV_SPECIAL = re.compile('[,"\n]')  # what csv.writer's minimal quoting quotes (a lone \r it leaves)
_JSON_SPECIAL = re.compile('[\x00-\x1f"\\\\]')  # what orjson escapes; the rest passes through


class Column(NamedTuple):
    name: str
    kind: Kind
    nullable: bool
    # How the value is read and written; only the speed depends on it, never the bytes. "single": on
    # its own, converted once per distinct value; "distinct": on its own and written inline (the
    # values differ on nearly every record); any other word names a group, read in one json_array.
    reading: str = "single"
    sql: str | None = None  # the expression read, when not the column itself


class ExportPage(NamedTuple):
    select: list[str]  # the SELECT list: the expressions the page function takes, in order
    page: PageOf


def _uuid(hex32: str) -> str:
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:]}"


def _time(stored: str, zone: str) -> str:
    """'YYYY-MM-DD HH:MM:SS.ffffff' (SQLAlchemy's SQLite form, UTC) → isoformat(), without zero µs."""
    fraction = stored[19:]
    return f"{stored[:10]}T{stored[11:19]}{'' if fraction == '.000000' else fraction}{zone}"


def _csv_text(value: str) -> str:
    if _CSV_SPECIAL.search(value) is None:
        return value
    return '"' + value.replace('"', '""') + '"'


def _json_text(value: str) -> str:
    if _JSON_SPECIAL.search(value) is None:
        return f'"{value}"'
    return orjson.dumps(value).decode()


def _converter(kind: Kind, fmt: Format, source: Source = "sqlite") -> Callable[[Any], str]:
    """A value's text in the line, for values seen for the first time (not null).

    SQLite hands over a UUID as 32 hex digits and a boolean as 0 or 1; PostgreSQL's record text
    has the UUID's usual form and t or f.
    """
    json = fmt == "ndjson"
    if kind == "uuid" and source == "postgresql":
        return (lambda text: f'"{text}"') if json else str
    if kind == "uuid":
        return (lambda hex32: f'"{_uuid(hex32)}"') if json else _uuid
    if kind == "bool" and source == "postgresql":
        return lambda value: "true" if value == "t" else "false"
    if kind == "text":
        return _json_text if json else _csv_text
    if kind == "json":  # a JSON text the gateway wrote (a record's `prices`): as it is in a JSON line
        return str if json else _csv_text
    if kind == "time":
        return (lambda stored: f'"{_time(stored, "Z")}"') if json else lambda stored: _time(stored, "+00:00")
    if kind == "bool":
        return lambda value: "true" if value else "false"
    if kind == "int_text" and json:
        return lambda value: f'"{value}"'
    return str


class _Memo(dict[Any, Any]):
    """`memo[value]`: the converted value, remembered for the values that repeat.

    Most columns take few distinct values in an export: for those a line costs a dictionary lookup,
    not a function call. Memory stays bounded: a full memo starts again empty.
    """

    def __init__(self, convert: Callable[[Any], Any], fixed: dict[Any, Any], bound: int = 20_000) -> None:
        super().__init__(fixed)
        self._convert = convert
        self._fixed = fixed
        self._bound = bound

    def __missing__(self, value: object) -> Any:
        converted = self._convert(value)
        if len(self) >= self._bound:
            self.clear()
            self.update(self._fixed)
        self[value] = converted
        return converted


def _record_values(text: str) -> list[str | None]:
    """The values of PostgreSQL's text of a ROW(...): empty is null; a value with a quote, backslash,
    parenthesis, comma or space (or an empty one) is quoted, with its quotes and backslashes doubled."""
    values: list[str | None] = []
    at, end = 1, len(text) - 1  # inside the parentheses
    while at <= end:
        if text[at] in ",)":
            values.append(None)
        elif text[at] != '"':
            stop = text.find(",", at, end)
            stop = end if stop < 0 else stop
            values.append(text[at:stop])
            at = stop
        else:
            chars, at = [], at + 1
            while text[at] != '"' or text[at + 1] == '"':
                step = 2 if text[at] in '"\\' else 1
                chars.append(text[at])
                at += step
            values.append("".join(chars))
            at += 1
        at += 1  # the comma (or, last, the closing parenthesis)
    return values


def _group_converter(
    members: Sequence[Column], runs: Sequence[int], fmt: Format, source: Source
) -> Callable[[str], tuple[str, ...]]:
    """A group's json_array text → the text in the line of each run of its columns (`runs`: their lengths)."""
    null = "" if fmt == "csv" else "null"
    converters = [_converter(column.kind, fmt, source) for column in members]
    parse: Callable[[str], list[Any]] = orjson.loads if source == "sqlite" else _record_values

    def convert(key: str) -> tuple[str, ...]:
        values = parse(key)
        texts = [
            null if value is None else text_of(value)
            for value, text_of in zip(values, converters, strict=True)
        ]
        if fmt == "ndjson":
            texts = [f'"{column.name}":{text}' for column, text in zip(members, texts, strict=True)]
        cells, start = [], 0
        for length in runs:
            cells.append(",".join(texts[start : start + length]))
            start += length
        return tuple(cells)

    return convert


def _quoted(name: str) -> str:
    return f'"{name}"'


# Each selected value's column of a page → the texts of one or more positions of the line.
ColumnWriter = Callable[[Sequence[Any]], list[Iterable[str]]]


def _remembered(convert: Callable[[Any], str], null: str) -> ColumnWriter:
    memo = _Memo(convert, {None: null})  # null is remembered too
    return lambda values: [map(memo.__getitem__, values)]


def _uuids(before: str, after: str, null: str) -> ColumnWriter:
    """SQLite's 32 hex digits in the usual form, written inline (a comprehension, no call a value)."""
    return lambda values: [
        [
            null if h is None else f"{before}{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}{after}"
            for h in values
        ]
    ]


def _times(before: str, zone: str, null: str) -> ColumnWriter:
    """SQLAlchemy's SQLite time text as isoformat() writes it: no fraction when it is zero."""
    return lambda values: [
        [
            null if t is None else f"{before}{t[:10]}T{t[11:19] if t[19:] == '.000000' else t[11:]}{zone}"
            for t in values
        ]
    ]


def _csv_texts(null: str) -> ColumnWriter:
    """Text that differs on every record, quoted only where csv's minimal quoting quotes."""
    return lambda values: [
        [null if v is None else _csv_text(v) if '"' in v or "," in v or "\n" in v else v for v in values]
    ]


def _json_texts(name: str, null: str) -> ColumnWriter:
    """Text that differs on every record as a JSON string; isprintable() is false for every control
    character orjson escapes (and for a few it does not, which orjson then writes as they are)."""
    return lambda values: [
        [
            null
            if v is None
            else name + _json_text(v)
            if '"' in v or "\\" in v or not v.isprintable()
            else f'{name}"{v}"'
            for v in values
        ]
    ]


def _direct_writer(column: Column, fmt: Format, source: Source) -> ColumnWriter:
    """The writer of a value read on its own; in a JSON line its text starts with `"name":`."""
    json = fmt == "ndjson"
    name = f'"{column.name}":' if json and column.kind != "line" else ""
    quote = '"' if json else ""
    null = name + ("null" if json else "")
    kind = column.kind
    if kind == "line":  # PostgreSQL wrote it, name included
        return lambda values: [values]
    if kind == "bool":  # SQLite's 0 and 1, or PostgreSQL's booleans (True == 1)
        texts = {None: null, 0: name + "false", 1: name + "true"}
        return lambda values: [map(texts.__getitem__, values)]
    if kind in ("int", "int_text"):
        template = f"{name}{quote if kind == 'int_text' else ''}%s{quote if kind == 'int_text' else ''}"
        if column.nullable:
            return _remembered(template.__mod__, null)
        write = str if template == "%s" else template.__mod__
        return lambda values: [map(write, values)]
    if kind == "time" and not column.nullable:
        return _times(name + quote, ("Z" if json else "+00:00") + quote, null)
    convert = _converter(kind, fmt, source)
    if column.reading != "distinct" or (column.nullable and kind != "text"):
        return _remembered(lambda value: name + convert(value), null)
    if kind == "uuid":
        return _uuids(name + quote, quote, null)
    return _json_texts(name, null) if json else _csv_texts(null)


def _group_writer(
    members: Sequence[Column], runs: Sequence[int], fmt: Format, source: Source
) -> ColumnWriter:
    """The writer of a group read as one value: each distinct value's texts (one per run) remembered."""
    memo = _Memo(_group_converter(members, runs, fmt, source), {})
    return lambda values: list(zip(*map(memo.__getitem__, values), strict=True))


def page_function(columns: Sequence[Column], fmt: Format, source: Source) -> ExportPage:
    """The SELECT list and `page(rows)`: the page's lines, each ending in a newline, as bytes.

    A page is written column by column: each selected value's column becomes the texts of its
    positions in the line (a memo lookup or one small function per value, looped over in C by
    `map`), and the lines are the positions zipped back together and joined.
    """
    select: list[str] = []
    writers: list[tuple[ColumnWriter, list[int]]] = []
    groups: dict[str, list[list[int]]] = {}  # each group's runs: its columns that follow each other
    for index, column in enumerate(columns):
        if not column.name.isidentifier():
            raise ValueError(f"unexpected column name {column.name!r}")
        if column.reading in ("distinct", "single"):
            select.append(column.sql or _quoted(column.name))
            writers.append((_direct_writer(column, fmt, source), [index]))
            continue
        runs = groups.setdefault(column.reading, [])
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    for runs in groups.values():
        members = [columns[index] for run in runs for index in run]
        values = ", ".join(_quoted(column.name) for column in members)
        select.append(f"json_array({values})" if source == "sqlite" else f"ROW({values})::text")
        writer = _group_writer(members, [len(run) for run in runs], fmt, source)
        writers.append((writer, [run[0] for run in runs]))
    # The line's positions in order: a column of its own, or the first of a group's run.
    order = sorted(position for _, positions in writers for position in positions)
    slot = {position: at for at, position in enumerate(order)}
    placed = [(writer, [slot[position] for position in positions]) for writer, positions in writers]
    head, separator, tail = ("", "\n", "\n") if fmt == "csv" else ("{", "}\n{", "}\n")

    def page(rows: Sequence[Sequence[Any]]) -> bytes:
        if not rows:
            return b""
        cells: list[Iterable[str]] = [()] * len(order)
        for values, (writer, at) in zip(zip(*rows, strict=True), placed, strict=True):
            for position, texts in zip(at, writer(values), strict=True):
                cells[position] = texts
        return (head + separator.join(map(",".join, zip(*cells, strict=True))) + tail).encode()

    return ExportPage(select, page)
