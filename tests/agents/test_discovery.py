"""Discovery: free-text match over role, name, expertise and capabilities; busiest first; top_k."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from switchboard.kit.clock import utcnow
from switchboard.metering.outcome import CallOutcome
from tests.agents.conftest import create
from tests.agents.test_registry import nested_error
from tests.support.gateway import Gateway, User


def discover(user: User, query: str, **extra: Any) -> list[dict[str, Any]]:
    response = user.client.post("/agents/discover", json={"query": query, **extra})
    assert response.status_code == 200, response.text
    return list(response.json()["agents"])


def record_sessions(gateway: Gateway, agent_id: str, sessions: int, calls_per_session: int = 2) -> None:
    """Usage records through the metering sink, as `/v1` writes them."""
    sink = gateway.app.state.call_sink
    economy = gateway.app.state.default_economy.id
    for _ in range(sessions):
        session_id = str(uuid.uuid4())
        for _ in range(calls_per_session):
            outcome = CallOutcome(
                request_id=uuid.uuid4().hex,
                occurred_at=utcnow(),
                economy_id=economy,
                user_id=uuid.uuid4(),
                provider="openai",
                model="gpt-4o-mini",
                selector=f"agent:{agent_id}",
                endpoint="chat.completions",
                credential_scope="deployment",
                agent_id=agent_id,
                session_id=session_id,
            )
            gateway.server.call_soon(sink.record(outcome))


def test_discover_matches_role_display_name_expertise_and_capabilities(gateway: Gateway) -> None:
    user = gateway.user()
    word = f"zq{uuid.uuid4().hex[:6]}"
    by_role = create(user, role=f"{word}ologist")
    by_name = create(user, display_name=f"The {word.upper()} bot")
    by_expertise = create(user, expertise=["cooking", f"{word} pastry"])
    by_skill = create(user, skills=[{"name": f"{word}_lookup", "prompt_addendum": "x"}])
    create(user, goal=word, system_prompt=word)  # goal and prompt are not searched

    found = {hit["agent_key"] for hit in discover(user, word.upper(), top_k=10)}
    assert found == {by_role["id"], by_name["id"], by_expertise["id"], by_skill["id"]}


def test_a_hit_has_the_seed_shape_and_a_uuid_fixed_per_agent(gateway: Gateway) -> None:
    hits = discover(gateway.user(), "research")
    assert hits == [
        {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, "switchboard:agent:researcher")),
            "agent_key": "researcher",
            "display_name": "Researcher",
            "role": "research analyst",
            "expertise": ["literature review", "fact checking"],
            "focus": None,
            "capabilities": ["web_research"],
        }
    ]
    assert discover(gateway.user(), "research")[0]["id"] == hits[0]["id"]


def test_discover_orders_busiest_first_by_distinct_sessions_then_by_id(gateway: Gateway) -> None:
    user = gateway.user()
    word = f"zq{uuid.uuid4().hex[:6]}"
    quiet, busy, busier, tie_a, tie_b = (
        create(user, id=f"{word}-{name}", role=f"{word} agent")["id"]
        for name in ("quiet", "busy", "busier", "tie-a", "tie-b")
    )
    record_sessions(gateway, busy, sessions=2, calls_per_session=5)  # many calls, few sessions
    record_sessions(gateway, busier, sessions=3, calls_per_session=1)
    record_sessions(gateway, tie_a, sessions=1)
    record_sessions(gateway, tie_b, sessions=1)

    order = [hit["agent_key"] for hit in discover(user, word, top_k=10)]
    assert order == [busier, busy, tie_a, tie_b, quiet]


def test_discover_returns_at_most_top_k_hits_and_four_by_default(gateway: Gateway) -> None:
    user = gateway.user()
    word = f"zq{uuid.uuid4().hex[:6]}"
    for _ in range(6):
        create(user, role=f"{word} agent")
    assert len(discover(user, word)) == 4
    assert len(discover(user, word, top_k=1)) == 1
    assert len(discover(user, word, top_k=50)) == 6


def test_discover_sees_only_the_newest_active_version(gateway: Gateway) -> None:
    user = gateway.user()
    word = f"zq{uuid.uuid4().hex[:6]}"
    spec = create(user, role=f"{word} agent")
    create(user, id=spec["id"], version="2", role="renamed")
    assert discover(user, word) == []
    assert user.client.post(f"/agents/{spec['id']}/versions/2/retire").status_code == 200
    assert [hit["agent_key"] for hit in discover(user, word)] == [spec["id"]]


BAD_BODIES: list[tuple[str, dict[str, Any]]] = [
    ("top_k zero", {"query": "research", "top_k": 0}),
    ("top_k negative", {"query": "research", "top_k": -1}),
    ("top_k a string", {"query": "research", "top_k": "3"}),
    ("top_k a float", {"query": "research", "top_k": 1.5}),
    ("top_k a boolean", {"query": "research", "top_k": True}),
    ("query missing", {"top_k": 3}),
    ("query empty", {"query": ""}),
    ("query not a string", {"query": ["research"]}),
    ("query with no words", {"query": " ?! "}),
]


@pytest.mark.parametrize(("case", "body"), BAD_BODIES, ids=[c[0] for c in BAD_BODIES])
def test_a_bad_discover_body_is_400_validation_failed(
    gateway: Gateway, case: str, body: dict[str, Any]
) -> None:
    response = gateway.user().client.post("/agents/discover", json=body)
    nested_error(response, 400, "VALIDATION_FAILED")
