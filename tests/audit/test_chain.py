"""The hash chain: `switchboard audit verify` passes on an intact chain and names the first event that
was changed, removed or reordered (tampered with directly in the database); retention purges whole days
and leaves a purge event the kept chain verifies from."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.audit.conftest import audit_events, make_rooms, run_cli, sql
from tests.conftest import GatewayFactory
from tests.support.gateway import Gateway


@pytest.fixture
def chained(make_gateway: GatewayFactory) -> Gateway:
    """A gateway of its own with a chain of at least six events (its start-up writes the config's)."""
    gateway = make_gateway()
    make_rooms(gateway.user(), 6)
    return gateway


def seq_and_id(gateway: Gateway) -> list[tuple[int, str]]:
    rows = sql(gateway, "SELECT seq, id FROM audit_events ORDER BY seq")
    return [(int(seq), str(uuid.UUID(str(event_id)))) for seq, event_id in rows]


def verify(gateway: Gateway, tmp_path: Path) -> tuple[int, str]:
    done = run_cli(gateway, tmp_path, "audit", "verify")
    return done.returncode, done.stdout + done.stderr


def test_an_intact_chain_verifies_and_each_hash_is_sha256_over_the_previous_hash_and_canonical_json(
    chained: Gateway, tmp_path: Path
) -> None:
    code, said = verify(chained, tmp_path)
    assert code == 0, said
    assert "ok" in said
    events = list(reversed(audit_events(chained.user("Admin"))))
    previous = "0" * 64
    for event in events:
        assert event["prev_hash"] == previous
        document = {k: v for k, v in event.items() if k not in ("seq", "prev_hash", "hash")}
        canonical = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
        assert event["hash"] == hashlib.sha256(previous.encode() + canonical).hexdigest()
        previous = event["hash"]


def test_verify_names_an_event_that_was_changed(chained: Gateway, tmp_path: Path) -> None:
    (_, _), (_, _), (seq, event_id), *_ = seq_and_id(chained)
    sql(chained, "UPDATE audit_events SET changes = :c WHERE seq = :s", c='{"name":[null,"forged"]}', s=seq)
    code, said = verify(chained, tmp_path)
    assert code == 1
    assert event_id in said and "changed" in said


def test_verify_names_the_event_after_one_that_was_removed(chained: Gateway, tmp_path: Path) -> None:
    ids = seq_and_id(chained)
    sql(chained, "DELETE FROM audit_events WHERE seq = :s", s=ids[2][0])
    code, said = verify(chained, tmp_path)
    assert code == 1
    assert ids[3][1] in said and "removed" in said


def test_verify_names_the_first_of_two_events_that_were_swapped(chained: Gateway, tmp_path: Path) -> None:
    ids = seq_and_id(chained)
    (a, a_id), (b, b_id) = ids[2], ids[3]
    sql(chained, "UPDATE audit_events SET seq = -1 WHERE seq = :a", a=a)
    sql(chained, "UPDATE audit_events SET seq = :a WHERE seq = :b", a=a, b=b)
    sql(chained, "UPDATE audit_events SET seq = :b WHERE seq = -1", b=b)
    code, said = verify(chained, tmp_path)
    assert code == 1
    assert b_id in said and "order" in said
    assert a_id not in said


def test_verify_notices_the_newest_events_removed(chained: Gateway, tmp_path: Path) -> None:
    ids = seq_and_id(chained)
    sql(chained, "DELETE FROM audit_events WHERE seq >= :s", s=ids[-2][0])
    code, said = verify(chained, tmp_path)
    assert code == 1
    assert ids[-3][1] in said and "after" in said


def test_verify_notices_the_oldest_events_removed_without_a_purge(chained: Gateway, tmp_path: Path) -> None:
    ids = seq_and_id(chained)
    sql(chained, "DELETE FROM audit_events WHERE seq <= :s", s=ids[1][0])
    code, said = verify(chained, tmp_path)
    assert code == 1
    assert ids[2][1] in said and "before it were removed" in said


def test_no_route_edits_or_deletes_an_event(chained: Gateway) -> None:
    admin = chained.user("Admin")
    event = audit_events(admin)[0]
    for method in ("PATCH", "PUT", "DELETE"):
        for path in ("/audit", f"/audit/{event['id']}"):
            response = admin.client.request(method, path, json={})
            assert response.status_code in (404, 405), (method, path, response.status_code)
    assert audit_events(admin)[0] == event


def test_retention_purges_whole_days_and_the_kept_chain_verifies_from_the_purge_events_anchor(
    chained: Gateway, tmp_path: Path
) -> None:
    ids = seq_and_id(chained)
    old = ids[:3]
    # Age three events by ten days (this breaks their hashes, which no longer matters once purged).
    sql(
        chained,
        "UPDATE audit_events SET at = :at WHERE seq <= :s",
        at=_days_ago(10),
        s=old[-1][0],
    )
    anchor = sql(chained, "SELECT hash FROM audit_events WHERE seq = :s", s=old[-1][0])[0][0]
    purged = run_cli(chained, tmp_path, "audit", "purge", "--days", "5")
    assert purged.returncode == 0, purged.stderr
    assert "purged 3 " in purged.stdout
    left = seq_and_id(chained)
    assert [i for _, i in left[:-1]] == [i for _, i in ids[3:]]
    admin = chained.user("Admin")
    purge: dict[str, Any] = audit_events(admin, action="audit.purge")[0]
    assert purge["changes"]["anchor"] == [None, anchor]
    assert purge["changes"]["events"] == [None, 3]
    assert purge["actor"]["auth_method"] == "cli"
    code, said = verify(chained, tmp_path)
    assert code == 0, said


def _days_ago(days: int) -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime.now(UTC) - timedelta(days=days)
