"""`from`/`to` query values: RFC 3339 timestamps with an offset, or dates (a `to` date includes its day)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from switchboard.errors import ValidationFailed

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_instant(text: str | None, name: str, *, end: bool = False) -> datetime | None:
    if text is None or text == "":
        return None
    text = text.strip()
    try:
        if _DATE.match(text):
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            if not end:
                return start
            # `to=2025-01-31` means through the end of that day.
            return start + timedelta(days=1) if day < date.max else datetime.max.replace(tzinfo=UTC)
        value = datetime.fromisoformat(text)
        if value.tzinfo is None:
            raise ValidationFailed(f"{name} needs a UTC offset (e.g. Z or +02:00)", param=name)
        return value.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValidationFailed(
            f"{name} must be an RFC 3339 timestamp with offset or a date (YYYY-MM-DD)", param=name
        ) from None


def parse_range(from_text: str | None, to_text: str | None) -> tuple[datetime | None, datetime | None]:
    """[start, end): `from` inclusive, `to` exclusive; 400 unless `from` comes before `to`."""
    start = parse_instant(from_text, "from")
    stop = parse_instant(to_text, "to", end=True)
    if start is not None and stop is not None and start >= stop:
        raise ValidationFailed("from must be before to", param="from")
    return start, stop
