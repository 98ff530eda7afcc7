"""What a limit is (SPEC §13), and the arithmetic of its windows: pure, no I/O."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

SubjectType = Literal["economy", "user", "room", "agent", "api_key"]
Metric = Literal["cost", "requests", "tokens"]
Window = Literal["minute", "hour", "day", "month", "total"]
SUBJECT_TYPES: tuple[SubjectType, ...] = ("economy", "user", "room", "agent", "api_key")
METRICS: tuple[Metric, ...] = ("cost", "requests", "tokens")
WINDOWS: tuple[Window, ...] = ("minute", "hour", "day", "month", "total")
ROLLING_SECONDS: dict[str, int] = {"minute": 60, "hour": 3600}
# The key of the one counter row of a rolling or `total` limit.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Limit:
    id: uuid.UUID
    subject_type: SubjectType
    subject_id: str
    economy_id: uuid.UUID | None
    metric: Metric
    window: Window
    amount: int
    allow_unpriced: bool = False
    managed_by: str = "api"

    @property
    def rolling(self) -> bool:
        return self.window in ROLLING_SECONDS


def refill_rate(limit: Limit) -> float:
    """A rolling window's bucket refills `amount` per window: this much per second (0 for calendar ones)."""
    return limit.amount / ROLLING_SECONDS[limit.window] if limit.rolling else 0.0


def _calendar_start(window: str, now: datetime) -> datetime:
    if window == "day":
        return now.replace(hour=0, minute=0, second=0, microsecond=0)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _calendar_end(window: str, start: datetime) -> datetime:
    if window == "day":
        return start + timedelta(days=1)
    return (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )


# Per calendar window, the last (start, end) found: calls within one day or month get the same start
# object back, which the ledger's statements then convert to the database's form only once, and the
# same end, which the headers of every call under a day or month limit count down to.
_CURRENT: dict[str, tuple[datetime, datetime]] = {}


def _calendar(window: str, now: datetime) -> tuple[datetime, datetime]:
    """The UTC day or month `now` falls in, as (start, end)."""
    if now.tzinfo is not UTC:  # the calendar is UTC's; other zones are not remembered
        start = _calendar_start(window, now)
        return start, _calendar_end(window, start)
    current = _CURRENT.get(window)
    if current is not None and current[0] <= now < current[1]:
        return current
    start = _calendar_start(window, now)
    current = _CURRENT[window] = (start, _calendar_end(window, start))
    return current


def window_start(window: str, now: datetime) -> datetime:
    """The key of the counter `now` falls in: the UTC day or month, else EPOCH (one row)."""
    if window != "day" and window != "month":
        return EPOCH
    return _calendar(window, now)[0]


def resets_at(window: str, now: datetime) -> datetime | None:
    """When a calendar window starts over; for a rolling one, when its bucket would be full again
    is said by `bucket_full_at`; `total` never resets."""
    if window == "day" or window == "month":
        return _calendar(window, now)[1]
    return None


def bucket_debt(window: str, amount: int, debt: int, since: datetime, now: datetime) -> int:
    """A rolling window's token bucket: `debt` (amount - level) shrinks at amount per window."""
    elapsed = max((now - since).total_seconds(), 0.0)
    refilled = int(elapsed * amount / ROLLING_SECONDS[window])
    return max(debt - refilled, 0)


def seconds_until_fits(limit: Limit, need: int, remaining: int, now: datetime) -> float:
    """How long until `need` fits: a bucket refills continuously; a calendar window at its reset."""
    if limit.rolling:
        missing = need - remaining
        return max(missing, 0) * ROLLING_SECONDS[limit.window] / max(limit.amount, 1)
    reset = resets_at(limit.window, now)
    return (reset - now).total_seconds() if reset is not None else math.inf


def retry_after(seconds: float) -> str:
    """Whole seconds, at least 1, rounded up (SPEC §13)."""
    return str(max(1, math.ceil(seconds)))


def openai_duration(seconds: float) -> str:
    """OpenAI's x-ratelimit-reset-* form: `20ms`, `1s`, `6m0s`, `1h2m3s`."""
    if seconds < 1:
        return f"{max(int(seconds * 1000), 0)}ms"
    whole = math.ceil(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
