"""Export lines made in Python from SQLite's raw column values, by a function generated once per format.

SQLite evaluates SQL functions slowly (a quarter of a microsecond per `substr` or `instr`), so there
the database hands over raw values and Python writes the line. The function is generated from the
column kinds (as `collections.namedtuple` generates its class), so a record costs one f-string with
a call only where a value needs work: hyphens in a UUID, an ISO time, quoting of text that holds a
comma, a quote or a newline (csv) or needs a JSON escape (NDJSON); plain text is copied as is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import orjson

Kind = Literal["uuid", "text", "time", "bool", "int", "int_text"]
Format = Literal["csv", "ndjson"]
LineOf = Callable[[Sequence[object]], str]

_CSV_SPECIAL = re.compile('[,"\n]')  # what csv.writer's minimal quoting quotes (a lone \r it leaves)
_JSON_SPECIAL = re.compile('[\x00-\x1f"\\\\]')  # what orjson escapes; the rest passes through


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


class _Memo(dict[object, str]):
    """`memo[value]`: the converted value, remembered (up to a bound) for the values that repeat.

    Most columns take few distinct values in an export (its economy, users, rooms, models,
    statuses): for those a line costs a dictionary lookup, not a function call.
    """

    def __init__(self, convert: Callable[[Any], str], bound: int = 10_000) -> None:
        super().__init__()
        self._convert = convert
        self._bound = bound

    def __missing__(self, value: object) -> str:
        converted = self._convert(value)
        if len(self) < self._bound:
            self[value] = converted
        return converted


def _helpers() -> dict[str, object]:
    """Fresh memos for each export."""
    return {
        "u": _Memo(_uuid),
        "uj": _Memo(lambda hex32: f'"{_uuid(hex32)}"'),
        "tc": lambda stored: _time(stored, "+00:00"),  # datetime.isoformat()
        "tj": lambda stored: f'"{_time(stored, "Z")}"',  # pydantic's JSON form of a UTC time
        "sj": lambda number: f'"{number}"',
        "qc": _Memo(_csv_text),
        "qj": _Memo(_json_text),
        "B": ("false", "true"),  # SQLite's booleans are 0 and 1
    }


# Each kind's text in a line, as an expression over `@` (the raw value); no quotes, no backslashes,
# so that it can sit in the generated f-string.
_CSV: dict[Kind, str] = {
    "uuid": "u[@]",
    "text": "qc[@]",
    "time": "tc(@)",
    "bool": "B[@]",
    "int": "@",
    "int_text": "@",
}
_JSON: dict[Kind, str] = {
    "uuid": "uj[@]",
    "text": "qj[@]",
    "time": "tj(@)",
    "bool": "B[@]",
    "int": "@",
    "int_text": "sj(@)",
}
_CELLS: dict[Format, dict[Kind, str]] = {"csv": _CSV, "ndjson": _JSON}


def line_function(columns: Sequence[tuple[str, Kind, bool]], fmt: Format) -> LineOf:
    """`line(row)` for rows of raw values in `columns` order (name, kind, nullable)."""
    cells = []
    for index, (name, kind, nullable) in enumerate(columns):
        if not name.isidentifier():
            raise ValueError(f"unexpected column name {name!r}")
        value = f"r[{index}]"
        cell = _CELLS[fmt][kind].replace("@", value)
        if nullable:
            cell = f"N if {value} is None else {cell}"
        cells.append(f"{{{cell}}}" if fmt == "csv" else f'"{name}":{{{cell}}}')
    body = ",".join(cells)
    if fmt == "ndjson":
        body = "{{" + body + "}}"
    source = f"def line(r):\n    return f{body!r}\n"
    namespace = dict(_helpers(), N="" if fmt == "csv" else "null")
    exec(compile(source, f"<export line, {fmt}>", "exec"), namespace)  # noqa: S102 (source built above)
    return namespace["line"]  # type: ignore[return-value]
