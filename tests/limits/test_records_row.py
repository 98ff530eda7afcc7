"""A records row (limits/allowance_rows.py) writes the fields its calls all have alike once: the calls
starting together are mostly one caller's, on one model, and the row stays within one database page
however many of them there are. Recovery reads each call's record back whole."""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from switchboard.limits.allowance_rows import CALLS, SHARED, listed_calls, listing


def record(**own: object) -> dict[str, object]:
    """A recovery record as llm/ledger.py builds it, with `own` fields changed."""
    base: dict[str, object] = {
        "request_id": str(uuid.uuid4()),
        "economy_id": uuid.UUID(int=7),
        "user_id": uuid.UUID(int=8),
        "room_id": None,
        "agent_id": None,
        "session_id": None,
        "credential_id": uuid.UUID(int=9),
        "credential_scope": "user",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "selector": "openai/gpt-4o-mini",
        "endpoint": "chat",
        "stream": False,
        "status": "abandoned",
        "error_code": "gateway_crashed",
        "idempotency_key": None,
        "api_key_id": None,
        "attempt": 1,
        "call_id": uuid.uuid4().hex,
        "record_id": uuid.uuid4(),
    }
    return {**base, **own}


def stored(row: dict[str, object]) -> dict[str, Any]:
    """The row's `call` as the database gives it back: JSON."""
    loaded: dict[str, Any] = orjson.loads(orjson.dumps(row))
    return loaded


def test_the_fields_every_call_has_alike_are_written_once_and_each_call_keeps_its_own() -> None:
    records = [record(), record(stream=True), record()]
    row = listing(records)
    assert set(row[SHARED]) == set(records[0]) - {"request_id", "call_id", "record_id", "stream"}
    assert [set(one) for one in row[CALLS]] == [{"request_id", "call_id", "record_id", "stream"}] * 3
    assert listed_calls(stored(row)) == [stored(one) for one in records]


def test_a_field_one_call_lacks_is_not_shared() -> None:
    first, second = record(), record()
    del second["session_id"]
    row = listing([first, second])
    assert "session_id" not in row[SHARED]
    assert listed_calls(stored(row)) == [stored(first), stored(second)]


def test_a_row_of_sixteen_calls_fits_one_page_where_their_whole_records_took_three() -> None:
    records = [record() for _ in range(16)]
    whole = len(orjson.dumps({CALLS: records}))
    compact = len(orjson.dumps(listing(records)))
    assert whole > 2 * 4096 and compact < 4096


def test_a_single_call_and_rows_written_before_sharing_read_as_they_are() -> None:
    alone = record()
    assert listed_calls(stored(listing([alone]))) == [stored(alone)]
    earlier = {CALLS: [stored(record()), stored(record())]}  # the format of earlier versions
    assert listed_calls(earlier) == earlier[CALLS]


def test_a_row_of_another_shape_gives_what_it_has_for_recovery_to_find_unreadable() -> None:
    assert listed_calls({CALLS: "not a list"}) == []
    assert listed_calls({SHARED: "not an object", CALLS: [{"request_id": "r"}]}) == [{"request_id": "r"}]
