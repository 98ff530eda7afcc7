"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

# SQLAlchemy's SQLite DATETIME storage format, "%04d-%02d-%02d %02d:%02d:%02d.%06d": what
# `isoformat(" ", "microseconds")` writes, less the "+00:00" a UTC time ends with.
_SQLITE_TEXT_LENGTH = 26


def _sqlite_text(value: datetime | None) -> str | None:
    """A UTC time as SQLite stores it: the same text as `process_bind_param` and SQLAlchemy's DATETIME
    processor write together, in one C call instead of a format over seven attributes."""
    if value is None:
        return None
    if value.tzinfo is not UTC:
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTCDateTime column")
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:_SQLITE_TEXT_LENGTH]


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes; SQLite would otherwise hand back naive values."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            return _sqlite_text  # every record, limit and lease writes several: the hot path's
        return super().bind_processor(dialect)

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTCDateTime column")
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        moment: datetime = value
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
