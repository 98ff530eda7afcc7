"""No cached answer ever reaches a caller who could not have spent the credential that paid for it
(SPEC §23): users with their own keys, a room's members, and a non-member."""

from __future__ import annotations

import openai
import pytest

from tests.cache.conftest import ASK, credentialed, prompt
from tests.fakes.provider import FakeProvider
from tests.limits.conftest import join_room, new_room
from tests.llm.conftest import add_credential, provider_base, unique_model
from tests.support.gateway import Gateway, User
from tests.support.sdks import openai_client


def ask(
    gateway: Gateway, user: User, model: str, messages: list[dict[str, str]], room: str | None = None
) -> str:
    headers = {**ASK, **({"x-working-group-id": room} if room else {})}
    with openai_client(gateway, user) as openai_sdk:
        raw = openai_sdk.chat.completions.with_raw_response.create(
            model=f"openai/{model}",
            messages=messages,  # type: ignore[arg-type]
            extra_headers=headers,
        )
    return str(raw.headers["x-switchboard-cache"])


def test_two_users_with_their_own_keys_never_get_each_others_answers(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    model, messages = unique_model("scope"), prompt()
    alice = credentialed(gateway, fake_provider, "openai")
    bob = credentialed(gateway, fake_provider, "openai")
    assert ask(gateway, alice, model, messages) == "miss"
    assert ask(gateway, bob, model, messages) == "miss"
    assert ask(gateway, alice, model, messages) == "hit"
    assert ask(gateway, bob, model, messages) == "hit"
    keys = [r.api_key for r in fake_provider.received(model)]
    assert len(keys) == 2 and keys[0] != keys[1]  # each answer paid with its own caller's key


def test_a_rooms_answer_reaches_its_members_and_no_one_else(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    model, messages = unique_model("scope"), prompt()
    owner = gateway.user()
    room = new_room(owner)
    add_credential(owner, "openai", provider_base(fake_provider, "openai"), scope="room", room_id=room)
    member = credentialed(gateway, fake_provider, "openai")  # their own key too: the room's wins in the room
    join_room(owner, room, member, "member")
    outsider = credentialed(gateway, fake_provider, "openai")
    assert ask(gateway, owner, model, messages, room) == "miss"
    assert ask(gateway, member, model, messages, room) == "hit"
    # Outside the room the member spends their own key, which did not pay for the room's answer.
    assert ask(gateway, member, model, messages) == "miss"
    assert ask(gateway, outsider, model, messages) == "miss"
    with pytest.raises(openai.NotFoundError):
        ask(gateway, outsider, model, messages, room)
    assert len(fake_provider.received(model)) == 3


def test_a_viewer_of_the_room_gets_no_cached_answer(gateway: Gateway, fake_provider: FakeProvider) -> None:
    model, messages = unique_model("scope"), prompt()
    owner = gateway.user()
    room = new_room(owner)
    add_credential(owner, "openai", provider_base(fake_provider, "openai"), scope="room", room_id=room)
    viewer = gateway.user()
    join_room(owner, room, viewer, "viewer")
    assert ask(gateway, owner, model, messages, room) == "miss"
    # A viewer may not spend the room's key (no_credential): nor is its answer theirs.
    with pytest.raises(openai.BadRequestError) as raised:
        ask(gateway, viewer, model, messages, room)
    assert raised.value.code == "no_credential"
    assert len(fake_provider.received(model)) == 1
