"""Billing reads: stable pages, summaries equal to sums, streamed exports, /usage/me, access, bad input."""

from __future__ import annotations

import csv
import io
import uuid
from collections import defaultdict
from typing import Any

import orjson
import pytest

from switchboard.metering import export
from switchboard.metering.economies import economy_id_for
from switchboard.metering.outcome import CallOutcome
from switchboard.metering.schemas import UsageRecordOut
from switchboard.metering.service import sessions_per_agent
from tests.metering.conftest import EconomyFactory, add_participant, at, make_outcome, record
from tests.support.gateway import Gateway, User


def all_records(client: Any, economy: str, **params: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = params | ({"cursor": cursor} if cursor else {})
        response = client.get(f"/economies/{economy}/usage", params=query)
        assert response.status_code == 200, response.text
        found += response.json()["data"]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            return found


@pytest.fixture()
def history(
    metering_gateway: Gateway, make_economy: EconomyFactory
) -> tuple[dict[str, Any], list[CallOutcome]]:
    """A fresh economy with 9 calls over three days, two users, two models, agents and rooms."""
    economy = make_economy(markup_bps=1000)
    alice, bob, room = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    same_instant = "2025-03-02T12:00:00+00:00"
    plan: list[dict[str, Any]] = [
        {"occurred_at": at("2025-03-01T08:00:00+00:00"), "user_id": alice, "prompt_tokens": 10},
        {
            "occurred_at": at("2025-03-01T23:59:59.999999+00:00"),
            "user_id": bob,
            "agent_id": "agent-a",
            "session_id": "s1",
        },
        {"occurred_at": at(same_instant), "user_id": alice, "agent_id": "agent-a", "session_id": "s1"},
        {"occurred_at": at(same_instant), "user_id": alice, "agent_id": "agent-a", "session_id": "s2"},
        {
            "occurred_at": at(same_instant),
            "user_id": bob,
            "room_id": room,
            "provider": "anthropic",
            "model": "claude-3-5-haiku-latest",
            "selector": "claude",
        },
        {
            "occurred_at": at("2025-03-02T13:30:00+01:00"),
            "user_id": bob,
            "room_id": room,
            "status": "error",
            "prompt_tokens": 0,
            "completion_tokens": 0,
        },
        {"occurred_at": at("2025-03-03T00:00:00+00:00"), "user_id": alice, "model": "unpriced-model"},
        {
            "occurred_at": at("2025-03-03T10:00:00-05:00"),
            "user_id": bob,
            "agent_id": "agent-b",
            "prompt_tokens": 123_457,
            "completion_tokens": 7,
        },
        {
            "occurred_at": at("2025-03-03T18:00:00+00:00"),
            "user_id": alice,
            "status": "cancelled",
            "completion_tokens": 3,
        },
    ]
    outcomes = [make_outcome(economy["id"], **({"user_id": alice} | row)) for row in plan]
    record(metering_gateway, outcomes)
    return economy, outcomes


def test_pages_hold_every_record_once_in_occurred_at_then_id_order(
    admin: User, history: tuple[dict[str, Any], list[CallOutcome]]
) -> None:
    economy, outcomes = history
    paged = all_records(admin.client, economy["id"], limit=2)
    assert len(paged) == len(outcomes) == len({r["id"] for r in paged})
    assert [(at(r["occurred_at"]), uuid.UUID(r["id"])) for r in paged] == sorted(
        (at(r["occurred_at"]), uuid.UUID(r["id"])) for r in paged
    )
    assert paged == all_records(admin.client, economy["slug"], limit=500)
    assert set(paged[0]) == set(UsageRecordOut.model_fields)
    assert all(isinstance(r["cost"], str) and r["cost"].isdigit() for r in paged)


def test_from_and_to_take_timestamps_or_dates_and_a_to_date_includes_its_day(
    admin: User, history: tuple[dict[str, Any], list[CallOutcome]]
) -> None:
    economy, _ = history
    day_one = all_records(admin.client, economy["id"], **{"from": "2025-03-01", "to": "2025-03-01"})
    assert len(day_one) == 2
    # A timestamp `to` is exclusive: the call at 13:30+01:00 (12:30Z) falls just outside.
    window = all_records(
        admin.client, economy["id"], **{"from": "2025-03-02T12:00:00Z", "to": "2025-03-02T12:30:00Z"}
    )
    assert len(window) == 3
    wider = all_records(
        admin.client,
        economy["id"],
        **{"from": "2025-03-02T12:00:00Z", "to": "2025-03-02T13:30:00.000001+01:00"},
    )
    assert len(wider) == 4
    assert (
        all_records(admin.client, economy["id"], **{"from": "2025-03-03T15:00:00Z"})[0]["completion_tokens"]
        == 7
    )
    assert len(all_records(admin.client, economy["id"], **{"to": "9999-12-31"})) == 9


@pytest.mark.parametrize("group_by", ["day", "model", "user", "agent", "room"])
def test_summary_rows_and_totals_equal_the_sums_of_the_records(
    admin: User, history: tuple[dict[str, Any], list[CallOutcome]], group_by: str
) -> None:
    economy, _ = history
    records = all_records(admin.client, economy["id"])
    response = admin.client.get(f"/economies/{economy['id']}/usage/summary", params={"group_by": group_by})
    assert response.status_code == 200, response.text
    summary = response.json()

    def key(r: dict[str, Any]) -> str | None:
        return {
            "day": at(r["occurred_at"]).date().isoformat(),
            "model": f"{r['provider']}/{r['model']}",
            "user": r["user_id"],
            "agent": r["agent_id"],
            "room": r["room_id"],
        }[group_by]

    expected: dict[str | None, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in records:
        bucket = expected[key(r)]
        bucket["requests"] += 1
        for name in (
            "prompt_tokens",
            "completion_tokens",
            "cached_tokens",
            "reasoning_tokens",
            "cache_write_tokens",
        ):
            bucket[name] += r[name]
        bucket["cost"] += int(r["cost"])
        bucket["unpriced_requests"] += 0 if r["priced"] else 1
    got = {row[group_by]: {k: int(v) for k, v in row.items() if k != group_by} for row in summary["rows"]}
    assert got == {k: dict(v) for k, v in expected.items()}
    assert summary["totals"]["cost"] == str(sum(int(r["cost"]) for r in records))
    assert summary["totals"]["requests"] == len(records) == 9
    assert all(isinstance(row["cost"], str) for row in summary["rows"])
    if group_by == "day":
        assert sorted(got) == ["2025-03-01", "2025-03-02", "2025-03-03"]


def test_summary_with_from_and_to_counts_only_that_window(
    admin: User, history: tuple[dict[str, Any], list[CallOutcome]]
) -> None:
    economy, _ = history
    summary = admin.client.get(
        f"/economies/{economy['id']}/usage/summary",
        params={"group_by": "day", "from": "2025-03-03", "to": "2025-03-03"},
    ).json()
    assert [row["day"] for row in summary["rows"]] == ["2025-03-03"]
    assert summary["totals"]["requests"] == 3


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/usage", {"from": "yesterday"}),
        ("/usage", {"from": "2025-13-01"}),
        ("/usage", {"to": "2025-03-01T10:00:00"}),  # no offset
        ("/usage", {"from": "0001-01-01T00:00:00+01:00"}),  # before year 1 in UTC
        ("/usage", {"from": "2025-03-02", "to": "2025-03-01"}),
        ("/usage", {"limit": 0}),
        ("/usage", {"limit": 501}),
        ("/usage", {"cursor": "garbage!"}),
        ("/usage", {"cursor": "WyJ4Il0"}),  # a well-formed cursor we never issued
        ("/usage/summary", {"group_by": "week"}),
        ("/usage/summary", {}),
        ("/usage/summary", {"group_by": "day", "from": "2025-03-05T00:00:00Z", "to": "2025-03-04"}),
        ("/usage/export", {"format": "xml"}),
        ("/usage/export", {"from": "soon"}),
    ],
)
def test_bad_billing_queries_are_400_in_the_flat_shape(
    admin: User, make_economy: EconomyFactory, path: str, params: dict[str, Any]
) -> None:
    economy = make_economy()
    response = admin.client.get(f"/economies/{economy['id']}{path}", params=params)
    assert response.status_code == 400, response.text
    assert set(response.json()) >= {"error", "code"} and isinstance(response.json()["error"], str)


def test_usage_is_read_by_admins_owners_and_read_usage_only(
    metering_gateway: Gateway, admin: User, make_economy: EconomyFactory
) -> None:
    economy = make_economy()
    owner, member, outsider = (metering_gateway.user() for _ in range(3))
    billing = metering_gateway.user(role="ApiClient", permissions=["ReadUsage"])
    add_participant(admin.client, economy["id"], user_id=str(owner.id), role="owner")
    add_participant(admin.client, economy["id"], user_id=str(member.id), role="member")
    path = f"/economies/{economy['id']}/usage"
    got = {
        name: user.client.get(path).status_code
        for name, user in [
            ("admin", admin),
            ("owner", owner),
            ("billing", billing),
            ("member", member),
            ("outsider", outsider),
        ]
    }
    assert got == {"admin": 200, "owner": 200, "billing": 200, "member": 403, "outsider": 404}
    assert metering_gateway.client().get(path).status_code == 401
    for suffix in ("/summary?group_by=user", "/export"):
        assert member.client.get(path + suffix).status_code == 403
        assert owner.client.get(path + suffix).status_code == 200
    # Everyone participates in default, but only its owners and billing read all of its usage.
    assert member.client.get("/economies/default/usage").status_code == 403


def test_csv_and_ndjson_exports_hold_exactly_the_records(
    admin: User, history: tuple[dict[str, Any], list[CallOutcome]]
) -> None:
    economy, _ = history
    records = all_records(admin.client, economy["id"])
    as_json = admin.client.get(f"/economies/{economy['id']}/usage/export", params={"format": "ndjson"})
    assert as_json.status_code == 200
    assert as_json.headers["content-type"].startswith("application/x-ndjson")
    assert [orjson.loads(line) for line in as_json.content.splitlines()] == records
    as_csv = admin.client.get(f"/economies/{economy['slug']}/usage/export")
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert "attachment" in as_csv.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(as_csv.text)))
    assert list(rows[0]) == list(UsageRecordOut.model_fields)
    assert [(r["id"], r["cost"], r["prompt_tokens"]) for r in rows] == [
        (r["id"], r["cost"], str(r["prompt_tokens"])) for r in records
    ]


def test_export_reads_page_by_page_and_is_sent_chunked(
    admin: User, history: tuple[dict[str, Any], list[CallOutcome]], monkeypatch: pytest.MonkeyPatch
) -> None:
    economy, _ = history
    monkeypatch.setattr(export, "PAGE_SIZE", 2)  # 9 records: five keyset pages, two of them on a tie
    response = admin.client.get(f"/economies/{economy['id']}/usage/export", params={"format": "ndjson"})
    assert "content-length" not in response.headers
    assert [orjson.loads(line)["id"] for line in response.content.splitlines()] == [
        r["id"] for r in all_records(admin.client, economy["id"])
    ]


def test_usage_me_lists_only_the_callers_own_records_across_economies(metering_gateway: Gateway) -> None:
    me, someone = metering_gateway.user(), metering_gateway.user()
    record(
        metering_gateway,
        [
            make_outcome(economy_id_for("default"), me.id, request_id="mine-1"),
            make_outcome(economy_id_for("team"), me.id, request_id="mine-2"),
            make_outcome(economy_id_for("default"), someone.id, request_id="theirs"),
        ],
    )
    first = me.client.get("/usage/me", params={"limit": 1}).json()
    second = me.client.get("/usage/me", params={"limit": 1, "cursor": first["next_cursor"]}).json()
    assert sorted(r["request_id"] for r in first["data"] + second["data"]) == ["mine-1", "mine-2"]
    assert second["next_cursor"] is None
    assert me.client.get("/usage/me", params={"from": "2020-01-02", "to": "2020-01-01"}).status_code == 400


def test_sessions_per_agent_counts_distinct_sessions(
    metering_gateway: Gateway, history: tuple[dict[str, Any], list[CallOutcome]]
) -> None:
    async def count() -> dict[str, int]:
        async with metering_gateway.app.state.sessionmaker() as session:
            return await sessions_per_agent(session, ["agent-a", "agent-b", "agent-none"])

    counts = metering_gateway.server.call_soon(count())
    # agent-a: s1 twice and s2 (other tests' records only add more); agent-b had no session id.
    assert counts.get("agent-a", 0) >= 2 and "agent-none" not in counts and "agent-b" not in counts
