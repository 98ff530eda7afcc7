"""A failed statement's error never carries its parameters (they may be sealed credentials)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from switchboard.db.engine import make_engine, make_sync_sqlite_engine

SECRET = "sk-never-in-an-error-0123456789"


async def test_a_failed_statement_on_the_async_engine_hides_its_parameters(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}")
    try:
        async with engine.connect() as conn:
            with pytest.raises(DBAPIError) as failed:
                await conn.execute(text("insert into no_such_table values (:secret)"), {"secret": SECRET})
    finally:
        await engine.dispose()
    assert "no_such_table" in str(failed.value)
    assert SECRET not in str(failed.value)


def test_a_failed_statement_on_the_writers_blocking_engine_hides_its_parameters(tmp_path: Path) -> None:
    engine = make_sync_sqlite_engine(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}")
    try:
        with engine.connect() as conn, pytest.raises(DBAPIError) as failed:
            conn.execute(text("insert into no_such_table values (:secret)"), {"secret": SECRET})
    finally:
        engine.dispose()
    assert "no_such_table" in str(failed.value)
    assert SECRET not in str(failed.value)
