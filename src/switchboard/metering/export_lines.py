"""Export pages written in Python from the database's values, by a function generated once per export.

On SQLite the cost of an export is Python's: about 0.15 µs for each value the driver hands over and
as much again to write it, while SQL functions are slow there (a quarter of a microsecond per call).
So the query hands over the values that differ on every record (ids, times, tokens) one by one, and
the columns that repeat from record to record (economy, user, room, agent, model, status, prices…)
as one `json_array(…)` per group: one value instead of a dozen, and a key under which the group's
text in the line is remembered, so that a record costs a dictionary lookup for all of them.
PostgreSQL writes the text of the values that differ itself (columns of kind "line") and hands over
each group as the text of a ROW(…), read back here once per distinct value.

The page function is generated from the columns (as `collections.namedtuple` generates its class):
a row is unpacked into locals and each line is one f-string, ids and times written inline with
slices; a call happens only for text that CSV must quote or JSON must escape, and for a group not
seen before. The bytes are those of the csv module and pydantic + orjson (tests/metering/
test_fast_export.py compares them on awkward records).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
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


# Names the generated code uses (default arguments, so that they are locals). Its expressions hold
# no quotes and no backslashes, so that they can sit in an f-string.
_CONSTANTS: dict[str, object] = {
    "Z0": ".000000",  # a time's fraction when its microseconds are zero: isoformat() leaves it out
    "DQ": '"',
    "CM": ",",
    "NL": "\n",
    "BS": "\\",
    "B": ("false", "true"),  # SQLite's booleans are 0 and 1
}


def _quoted(name: str) -> str:
    return f'"{name}"'


_MEMOS: dict[str, str] = {"uuid": "U", "text": "Q", "time": "T", "json": "J"}


def _special(c: str, fmt: Format) -> str:
    """The test that text `c` needs CSV's quotes or JSON's escapes."""
    if fmt == "csv":
        return f"DQ in {c} or CM in {c} or NL in {c}"
    # isprintable() is false for every control character orjson escapes (and a few it does not).
    return f"DQ in {c} or BS in {c} or not {c}.isprintable()"


def _cell(column: Column, c: str, fmt: Format) -> tuple[str, str]:
    """(statements that prepare `c`, the f-string text of the value in the line)."""
    kind, json = column.kind, fmt == "ndjson"
    quote = '"' if json else ""
    if kind == "line":
        return "", f"{{{c}}}"
    if kind == "bool":
        return "", f"{{BN[{c}]}}" if column.nullable else f"{{B[{c}]}}"
    if kind in ("int", "int_text"):
        if kind == "int" or not json:
            return "", f"{{N if {c} is None else {c}}}" if column.nullable else f"{{{c}}}"
        if column.nullable:
            return f"{c} = N if {c} is None else DQ + str({c}) + DQ", f"{{{c}}}"
        return "", f'"{{{c}}}"'
    if kind == "time" and not column.nullable:
        zone = 'Z"' if json else "+00:00"
        return "", f"{quote}{{{c}[:10]}}T{{{c}[11:19] if {c}[19:] == Z0 else {c}[11:]}}{zone}"
    if column.reading != "distinct" or (column.nullable and kind != "text"):
        return "", f"{{{_MEMOS[kind]}[{c}]}}"  # remembered; null included
    if kind == "uuid":
        return "", f"{quote}{{{c}[:8]}}-{{{c}[8:12]}}-{{{c}[12:16]}}-{{{c}[16:20]}}-{{{c}[20:]}}{quote}"
    convert = "j" if json else "q"
    if not column.nullable:
        escaped = f"j({c})[1:-1]" if json else f"q({c})"
        return f"if {_special(c, fmt)}: {c} = {escaped}", f"{quote}{{{c}}}{quote}"
    prelude = f"if {c} is None: {c} = N\nelif {_special(c, fmt)}: {c} = {convert}({c})"
    if json:
        prelude += f"\nelse: {c} = DQ + {c} + DQ"
    return prelude, f"{{{c}}}"


def page_function(columns: Sequence[Column], fmt: Format, source: Source) -> ExportPage:
    """The SELECT list and `page(rows)`: the page's lines, each ending in a newline, as bytes."""
    null = "" if fmt == "csv" else "null"
    helpers: dict[str, object] = {
        **_CONSTANTS,
        "N": null,
        "U": _Memo(_converter("uuid", fmt, source), {None: null}),  # null is remembered too
        "Q": _Memo(_converter("text", fmt, source), {None: null}),
        "T": _Memo(_converter("time", fmt, source), {None: null}),
        "J": _Memo(_converter("json", fmt, source), {None: null}),
        "BN": {None: null, 0: "false", 1: "true"},
        "q": _csv_text,
        "j": _json_text,
    }
    select, variables = [], []
    groups: dict[str, list[list[int]]] = {}  # each group's runs: its columns that follow each other
    for index, column in enumerate(columns):
        if not column.name.isidentifier():
            raise ValueError(f"unexpected column name {column.name!r}")
        if column.reading in ("distinct", "single"):
            select.append(column.sql or _quoted(column.name))
            variables.append(f"c{index}")
            continue
        runs = groups.setdefault(column.reading, [])
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    prelude: list[str] = []
    run_at: dict[int, str] = {}  # a run's first column → the variable that holds the run's text
    for number, runs in enumerate(groups.values()):
        members = [columns[index] for run in runs for index in run]
        convert = _group_converter(members, [len(run) for run in runs], fmt, source)
        helpers[f"G{number}"] = _Memo(convert, {})
        values = ", ".join(_quoted(column.name) for column in members)
        select.append(f"json_array({values})" if source == "sqlite" else f"ROW({values})::text")
        variables.append(f"g{number}")
        names = [f"g{number}_{run}" for run in range(len(runs))]
        run_at.update(zip([run[0] for run in runs], names, strict=True))
        prelude.append(f"{', '.join(names)}, = G{number}[g{number}]")
    texts = []
    for index, column in enumerate(columns):
        if index in run_at:
            texts.append(f"{{{run_at[index]}}}")
        elif column.reading in ("distinct", "single"):
            statements, text = _cell(column, f"c{index}", fmt)
            if statements:
                prelude.append(statements)
            bare = fmt == "csv" or column.kind == "line"
            texts.append(text if bare else f'"{column.name}":{text}')
    body = ",".join(texts) if fmt == "csv" else "{{" + ",".join(texts) + "}}"
    indented = "\n".join("        " + line for statement in prelude for line in statement.split("\n"))
    code = (
        f"def page(rows, {', '.join(f'{name}={name}' for name in helpers)}):\n"
        "    lines = []\n"
        "    add = lines.append\n"
        f"    for {', '.join(variables)}, in rows:\n"
        f"{indented}\n"
        f"        add(f{body!r})\n"
        "    lines.append('')\n"
        "    return NL.join(lines).encode()\n"
    )
    namespace = dict(helpers)
    exec(compile(code, f"<export page, {fmt}>", "exec"), namespace)  # noqa: S102 (source built above)
    return ExportPage(select, namespace["page"])  # type: ignore[arg-type]
