"""A calendar window's start and reset, as the ledger keys its counters: UTC days and months."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from switchboard.limits.rules import EPOCH, resets_at, window_start


def test_calls_in_one_month_share_its_start_and_the_next_month_has_its_own() -> None:
    late = datetime(2026, 11, 30, 23, 59, 59, 999999, tzinfo=UTC)
    first = window_start("month", datetime(2026, 11, 26, 11, 9, tzinfo=UTC))
    assert first == datetime(2026, 11, 1, tzinfo=UTC)
    assert window_start("month", late) is first  # the same object: converted for the database once
    assert window_start("month", late + timedelta(microseconds=1)) == datetime(2026, 12, 1, tzinfo=UTC)
    assert window_start("month", datetime(2026, 12, 31, 23, 0, tzinfo=UTC)) == datetime(
        2026, 12, 1, tzinfo=UTC
    )
    assert window_start("month", datetime(2027, 1, 1, tzinfo=UTC)) == datetime(2027, 1, 1, tzinfo=UTC)
    # Back in time (another call's older `occurred_at`): its own month again, not the last one found.
    assert window_start("month", late) == datetime(2026, 11, 1, tzinfo=UTC)
    assert resets_at("month", datetime(2026, 12, 5, tzinfo=UTC)) == datetime(2027, 1, 1, tzinfo=UTC)


def test_days_start_at_utc_midnight_and_other_zones_are_read_in_their_own_calendar() -> None:
    assert window_start("day", datetime(2026, 11, 26, 0, 0, tzinfo=UTC)) == datetime(2026, 11, 26, tzinfo=UTC)
    assert window_start("day", datetime(2026, 11, 26, 23, 59, tzinfo=UTC)) == datetime(
        2026, 11, 26, tzinfo=UTC
    )
    assert window_start("day", datetime(2026, 11, 27, 0, 0, tzinfo=UTC)) == datetime(2026, 11, 27, tzinfo=UTC)
    assert resets_at("day", datetime(2026, 11, 27, 5, tzinfo=UTC)) == datetime(2026, 11, 28, tzinfo=UTC)
    plus_five = timezone(timedelta(hours=5))
    assert window_start("day", datetime(2026, 11, 27, 3, 0, tzinfo=plus_five)) == datetime(
        2026, 11, 27, tzinfo=plus_five
    )


def test_rolling_and_total_windows_have_one_counter() -> None:
    for window in ("minute", "hour", "total"):
        assert window_start(window, datetime(2026, 11, 26, 11, 9, tzinfo=UTC)) is EPOCH
    assert resets_at("total", datetime(2026, 11, 26, tzinfo=UTC)) is None
