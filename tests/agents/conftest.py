"""Agents fixtures: a gateway whose config declares seed agents, spec factories, rooms."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.support.gateway import Gateway, User

SEED_AGENTS: list[dict[str, Any]] = [
    {
        "id": "researcher",
        "version": "1",
        "display_name": "Researcher",
        "role": "research analyst",
        "goal": "Find and summarise sources",
        "system_prompt": "You research questions carefully.",
        "skills": [
            {"name": "web_research", "prompt_addendum": "Cite every source.", "tool_grants": ["web_search"]}
        ],
        "model": {"kind": "tagged", "tag": "fast"},
        "expertise": ["literature review", "fact checking"],
    },
    {
        "id": "code-reviewer",
        "version": "1",
        "display_name": "Code Reviewer",
        "role": "software reviewer",
        "goal": "Review code for defects",
        "system_prompt": "You review code.",
        "skills": [
            {
                "name": "code_review",
                "prompt_addendum": "Point at lines.",
                "tool_grants": {"code_interpreter": {}},
            }
        ],
        "reasoning_effort": "medium",
        "expertise": ["python", "security"],
    },
]


def agents_test_config(provider_url: str) -> dict[str, Any]:
    return {**default_test_config(provider_url), "agents": SEED_AGENTS}


@pytest.fixture(scope="session")
def gateway(make_session_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    """One gateway for the agents tests, with the seed agents above in its config."""
    return make_session_gateway(config=agents_test_config(fake_provider.base_url))


def make_spec(**overrides: Any) -> dict[str, Any]:
    """A valid user-tier spec with a fresh id; override any field."""
    spec: dict[str, Any] = {
        "id": f"agent-{uuid.uuid4().hex[:10]}",
        "version": "1",
        "display_name": "Helper",
        "role": "assistant",
        "goal": "Help",
        "source": "user",
        "system_prompt": "You help.",
    }
    spec.update(overrides)
    return spec


def create(user: User, **overrides: Any) -> dict[str, Any]:
    spec = make_spec(**overrides)
    response = user.client.post("/agents", json=spec)
    assert response.status_code == 201, response.text
    return spec


def make_room(owner: User) -> uuid.UUID:
    response = owner.client.post("/working-groups", json={"name": f"room-{uuid.uuid4().hex[:6]}"})
    assert response.status_code == 201, response.text
    return uuid.UUID(response.json()["id"])


def add_member(owner: User, room_id: uuid.UUID, member: User, role: str = "member") -> None:
    response = owner.client.post(
        f"/working-groups/{room_id}/members", json={"user_id": str(member.id), "role": role}
    )
    assert response.status_code == 201, response.text


def make_economy(admin: User, *members: User) -> uuid.UUID:
    response = admin.client.post("/economies", json={"slug": f"e-{uuid.uuid4().hex[:8]}", "name": "Team"})
    assert response.status_code == 201, response.text
    economy_id = uuid.UUID(response.json()["id"])
    for member in members:
        added = admin.client.post(
            f"/economies/{economy_id}/participants", json={"user_id": str(member.id), "role": "member"}
        )
        assert added.status_code == 201, added.text
    return economy_id


def visible_ids(user: User) -> set[str]:
    response = user.client.get("/agents")
    assert response.status_code == 200, response.text
    return {row["id"] for row in response.json()}
