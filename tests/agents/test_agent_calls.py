"""`model: "agent:<id>"` on /v1 with the openai SDK: the agent's prompt, limits, room and economy apply."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.agents.conftest import add_member, create, make_economy, make_room
from tests.llm.conftest import add_credential, provider_base, unique_model
from tests.support.gateway import Gateway, User
from tests.support.sdks import openai_client


@pytest.fixture
def sdk_for(gateway: Gateway) -> Iterator[Any]:
    clients: list[openai.OpenAI] = []

    def make(user: User) -> openai.OpenAI:
        client = openai_client(gateway, user)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def test_an_agent_call_carries_its_prompt_and_limits_and_bills_its_economy(
    gateway: Gateway, fake_provider: Any, sdk_for: Any
) -> None:
    admin, user = gateway.user(role="Admin"), gateway.user()
    add_credential(user, "openai", provider_base(fake_provider, "openai"))
    economy = make_economy(admin, user)
    model = unique_model("agent")
    fake_provider.script(model, reply="Aye.", prompt_tokens=30, completion_tokens=2)
    spec = create(
        user,
        system_prompt="You are a pirate.",
        economy_id=str(economy),
        reasoning_effort="low",
        skills=[{"name": "rhyme", "prompt_addendum": "Answer in rhyme."}],
        model={"kind": "exact", "provider": "openai", "model": model},
    )
    session_id = str(uuid.uuid4())

    completion = sdk_for(user).chat.completions.create(
        model=f"agent:{spec['id']}",
        messages=[{"role": "user", "content": "hello"}],
        extra_headers={"X-Session-Id": session_id},
    )
    assert completion.choices[0].message.content == "Aye."

    (seen,) = fake_provider.received(model)
    assert seen.body["messages"] == [
        {"role": "system", "content": "You are a pirate.\n\nAnswer in rhyme."},
        {"role": "user", "content": "hello"},
    ]
    assert (seen.body["max_tokens"], seen.body["reasoning_effort"]) == (4000, "low")
    usage = admin.client.get(f"/economies/{economy}/usage").json()["data"]
    assert [(r["agent_id"], r["session_id"], r["selector"], r["prompt_tokens"]) for r in usage] == [
        (spec["id"], session_id, f"agent:{spec['id']}", 30)
    ]


def test_an_agent_call_uses_its_rooms_credentials_for_a_member(
    gateway: Gateway, fake_provider: Any, sdk_for: Any
) -> None:
    owner, member = gateway.user(), gateway.user()
    room = make_room(owner)
    add_member(owner, room, member)
    room_key, credential_id = add_credential(
        owner, "openai", provider_base(fake_provider, "openai"), scope="room", room_id=str(room)
    )
    model = unique_model("agent")
    spec = create(
        owner, working_group_id=str(room), model={"kind": "exact", "provider": "openai", "model": model}
    )

    raw = sdk_for(member).chat.completions.with_raw_response.create(
        model=f"agent:{spec['id']}", messages=[{"role": "user", "content": "hi"}], max_tokens=12
    )
    assert raw.headers["x-switchboard-credential"] == credential_id
    (seen,) = fake_provider.received(model)
    assert seen.api_key == room_key
    assert seen.body["max_tokens"] == 12  # the request's own limit wins
    usage = member.client.get("/usage/me").json()["data"]
    assert [(r["agent_id"], r["room_id"], r["credential_scope"]) for r in usage] == [
        (spec["id"], str(room), "room")
    ]


def test_an_agent_the_caller_cannot_see_is_model_not_found(gateway: Gateway, sdk_for: Any) -> None:
    owner, other = gateway.user(), gateway.user()
    spec = create(owner)
    for model in (f"agent:{spec['id']}", "agent:no-such-agent"):
        with pytest.raises(openai.NotFoundError) as raised:
            sdk_for(other).chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
        assert raised.value.code == "model_not_found"
