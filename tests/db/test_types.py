"""UTCDateTime stores on SQLite exactly the text SQLAlchemy's own DATETIME would, by a shorter path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import DateTime
from sqlalchemy.dialects import postgresql, sqlite

from switchboard.db.types import UTCDateTime

SQLITE = sqlite.dialect()
MOMENTS = [
    datetime(2026, 11, 26, 11, 9, 0, tzinfo=UTC),  # no microseconds: still written, as SQLAlchemy does
    datetime(2026, 11, 26, 11, 9, 0, 123456, tzinfo=UTC),
    datetime(1, 1, 1, tzinfo=UTC),  # a short year is zero-padded
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=timezone(timedelta(hours=5))),  # another offset: UTC's day before
    datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Paris")),
]


def _sqlalchemy_text(moment: datetime) -> str:
    """What the type stored before: its bind step, then SQLAlchemy's DATETIME processor for SQLite."""
    utc = UTCDateTime().process_bind_param(moment, SQLITE)
    result: str = DateTime(timezone=True).dialect_impl(SQLITE).bind_processor(SQLITE)(utc)
    return result


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_a_time_is_stored_as_the_text_sqlalchemy_writes(moment: datetime) -> None:
    bind = UTCDateTime().dialect_impl(SQLITE).bind_processor(SQLITE)
    assert bind(moment) == _sqlalchemy_text(moment)


def test_a_naive_time_is_refused_and_none_is_kept() -> None:
    bind = UTCDateTime().dialect_impl(SQLITE).bind_processor(SQLITE)
    with pytest.raises(ValueError, match="naive"):
        bind(datetime(2026, 11, 26, 11, 9))
    assert bind(None) is None


def test_postgresql_keeps_sqlalchemys_processing() -> None:
    dialect = postgresql.asyncpg.dialect()  # type: ignore[attr-defined]
    bind = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    moment = datetime(2026, 1, 1, 5, tzinfo=timezone(timedelta(hours=5)))
    converted = bind(moment) if bind is not None else UTCDateTime().process_bind_param(moment, dialect)
    assert converted == datetime(2026, 1, 1, tzinfo=UTC) and converted.tzinfo is UTC
