"""apply_agent, what `/v1` calls for `model: "agent:<id>"`, through the service on the gateway's database."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from switchboard.agents.apply import AppliedAgent, apply_agent
from switchboard.auth.principal import Principal
from switchboard.errors import NotFound
from tests.agents.conftest import add_member, create, make_economy, make_room
from tests.support.gateway import Gateway, User


def apply(gateway: Gateway, user: User, agent_id: str, body: dict[str, Any]) -> AppliedAgent:
    async def run() -> AppliedAgent:
        async with gateway.app.state.sessionmaker() as session:
            return await apply_agent(session, Principal(user_id=user.id), agent_id, body)

    result: AppliedAgent = gateway.server.call_soon(run())
    return result


SKILLS = [{"name": "a", "prompt_addendum": "Addendum A."}, {"name": "b", "prompt_addendum": "Addendum B."}]


def test_the_agents_prompt_and_skill_addenda_lead_as_one_system_message(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user, system_prompt="You are terse.", skills=SKILLS)
    body = {
        "model": f"agent:{spec['id']}",
        "messages": [{"role": "system", "content": "Caller's own."}, {"role": "user", "content": "hi"}],
    }
    applied = apply(gateway, user, spec["id"], body)
    assert applied.body["messages"] == [
        {"role": "system", "content": "You are terse.\n\nAddendum A.\n\nAddendum B."},
        *body["messages"],
    ]
    assert len(body["messages"]) == 2  # the caller's body is left as it was
    assert (applied.agent_id, applied.version) == (spec["id"], "1")


def test_max_tokens_and_reasoning_effort_apply_unless_the_request_sets_them(gateway: Gateway) -> None:
    user = gateway.user()
    plain = create(user)
    tuned = create(user, max_tokens=123, reasoning_effort="max")
    messages = [{"role": "user", "content": "hi"}]

    defaults = apply(gateway, user, plain["id"], {"messages": messages}).body
    assert defaults["max_tokens"] == 4000 and "reasoning_effort" not in defaults
    assert apply(gateway, user, tuned["id"], {"messages": messages}).body | {"messages": []} == {
        "messages": [],
        "max_tokens": 123,
        "reasoning_effort": "high",
    }
    own = apply(
        gateway, user, tuned["id"], {"messages": messages, "max_tokens": 7, "reasoning_effort": "low"}
    )
    assert (own.body["max_tokens"], own.body["reasoning_effort"]) == (7, "low")
    newer = apply(gateway, user, tuned["id"], {"messages": messages, "max_completion_tokens": 9}).body
    assert "max_tokens" not in newer and newer["max_completion_tokens"] == 9


@pytest.mark.parametrize(
    ("model", "selector"),
    [
        (None, "default"),
        ({"kind": "tagged", "tag": "fast"}, "tag:fast"),
        ({"kind": "exact", "provider": "openai", "model": "gpt-4o-mini"}, "openai/gpt-4o-mini"),
        ({"kind": "alias", "alias": "claude"}, "claude"),
    ],
)
def test_the_selector_comes_back_in_v1_grammar(
    gateway: Gateway, model: dict[str, Any] | None, selector: str
) -> None:
    user = gateway.user()
    spec = create(user, model=model)
    assert apply(gateway, user, spec["id"], {"messages": []}).selector == selector


def test_the_agents_room_is_the_context_only_while_the_caller_is_a_member(gateway: Gateway) -> None:
    owner, author = gateway.user(), gateway.user()
    room = make_room(owner)
    add_member(owner, room, author)
    shared = create(author, working_group_id=str(room))
    personal = create(author, working_group_id=str(room), user_id=str(author.id))
    assert apply(gateway, owner, shared["id"], {}).room_id == room
    assert apply(gateway, author, personal["id"], {}).room_id == room

    assert owner.client.delete(f"/working-groups/{room}/members/{author.id}").status_code == 204
    assert apply(gateway, author, personal["id"], {}).room_id is None


def test_the_agents_economy_comes_back(gateway: Gateway) -> None:
    admin, user = gateway.user(role="Admin"), gateway.user()
    economy = make_economy(admin, user)
    spec = create(user, economy_id=str(economy))
    assert apply(gateway, user, spec["id"], {}).economy_id == economy
    assert apply(gateway, user, create(user)["id"], {}).economy_id is None


def test_an_agent_the_caller_cannot_see_is_model_not_found(gateway: Gateway) -> None:
    owner, other = gateway.user(), gateway.user()
    spec = create(owner)
    for agent_id in (spec["id"], f"missing-{uuid.uuid4().hex[:6]}"):
        with pytest.raises(NotFound) as raised:
            apply(gateway, other, agent_id, {})
        assert raised.value.openai_code == "model_not_found"
    assert owner.client.post(f"/agents/{spec['id']}/versions/1/retire").status_code == 200
    with pytest.raises(NotFound):
        apply(gateway, owner, spec["id"], {})


def test_the_newest_active_version_is_applied(gateway: Gateway) -> None:
    user = gateway.user()
    spec = create(user, system_prompt="one")
    create(user, id=spec["id"], version="2", system_prompt="two")
    assert apply(gateway, user, spec["id"], {}).body["messages"][0]["content"] == "two"
    assert user.client.post(f"/agents/{spec['id']}/versions/2/retire").status_code == 200
    assert apply(gateway, user, spec["id"], {}).body["messages"][0]["content"] == "one"
