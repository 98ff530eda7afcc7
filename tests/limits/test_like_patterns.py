"""The allowance rows' LIKE patterns are written into their statements, never bound: SQLite compiles a
statement again at every execution whose LIKE pattern is a parameter (the value decides whether an
index may serve it), and that was a fifth of every grant's instructions (limits/allowance_rows.py)."""

from __future__ import annotations

import re

from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import asyncpg

from switchboard.limits import allowance_rows


def test_the_live_holders_and_reclaim_markers_are_found_by_patterns_in_the_statement() -> None:
    for statement in (
        allowance_rows._live_names(1),
        allowance_rows._live_names(3),
        allowance_rows._RECLAIMED,
    ):
        for dialect in (sqlite.dialect(), asyncpg.dialect()):  # the gateway's drivers
            sql = str(statement.compile(dialect=dialect))
            patterns = re.findall(r"LIKE ('[^']*'|[^\s)]+)", sql)
            assert patterns, sql
            assert set(patterns) <= {"'slot-%'", "'reclaim-%'"}, sql
