"""Pooled keys (SPEC §14): every credential in reach is a route, balanced within its scope; failing
routes cool down; a rejected key waits for a new secret."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.routing.conftest import Caller, key


def unique_model() -> str:
    return f"openai/gpt-{uuid.uuid4().hex[:10]}"


def test_keys_of_one_scope_take_turns(caller: Caller) -> None:
    ids = [caller.add_key("openai", key()) for _ in range(3)]
    used = Counter(caller.chat().headers["x-switchboard-credential"] for _ in range(6))
    assert used == {credential: 2 for credential in ids}


def test_the_least_busy_key_goes_first(caller: Caller, fake_provider: Any) -> None:
    ids = [caller.add_key("openai", key()), caller.add_key("openai", key())]
    held = f"gpt-held-{uuid.uuid4().hex[:8]}"
    fake_provider.script(held, held=True)
    answers: list[Any] = []
    waiting = threading.Thread(target=lambda: answers.append(caller.chat(f"openai/{held}")))
    waiting.start()
    try:
        [arrived] = _wait_for(lambda: fake_provider.received(held))
        [busy] = [c for c in ids if caller.credential_keys[c] == arrived.api_key]
        [idle] = [c for c in ids if c != busy]
        # Two calls while one is in flight: both go to the idle key, whatever the rotation says.
        assert [caller.chat().headers["x-switchboard-credential"] for _ in range(2)] == [idle, idle]
    finally:
        fake_provider.release(held)
        waiting.join(10)
    assert answers[0].headers["x-switchboard-credential"] == busy


def test_a_key_streaming_a_long_answer_stays_busy_while_short_streams_come_and_go(
    caller: Caller, fake_provider: Any
) -> None:
    ids = [caller.add_key("openai", key()), caller.add_key("openai", key())]
    long = f"gpt-long-{uuid.uuid4().hex[:8]}"
    fake_provider.script(long, endless=True, chunk_delay=0.05)
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
    with caller.sdk.chat.completions.with_streaming_response.create(
        model=f"openai/{long}", messages=messages, stream=True
    ) as opened:
        lines = opened.iter_lines()  # kept: a dropped iterator would close the stream
        assert next(lines).startswith("data: ")  # the long stream is under way: its key is busy
        busy = opened.headers["x-switchboard-credential"]
        [idle] = [c for c in ids if c != busy]
        used = []
        for _ in range(3):  # one after another, each ended before the next starts
            with caller.sdk.chat.completions.with_streaming_response.create(
                model="openai/gpt-4o-mini", messages=messages, stream=True
            ) as short:
                assert [line for line in short.iter_lines() if line][-1] == "data: [DONE]"
                used.append(short.headers["x-switchboard-credential"])
        assert used == [idle, idle, idle]


def test_the_rooms_keys_come_before_the_callers_own(caller: Caller) -> None:
    room = caller.user.client.post("/working-groups", json={"name": "pool"}).json()["id"]
    rejected_room_key = key("reject")
    caller.add_key("openai", rejected_room_key, room_id=room)
    own = caller.add_key("openai", key())
    response = caller.post({"model": "openai/gpt-4o-mini"}, **{"X-Working-Group-Id": room})
    assert response.status_code == 200, response.text
    assert response.headers["x-switchboard-credential"] == own
    assert response.headers["x-switchboard-attempts"] == "2"
    assert caller.tried(rejected_room_key) == 1
    [first, _] = caller.records(response.headers["x-request-id"])
    assert (first["credential_scope"], first["error_code"]) == ("room", "upstream_credential_rejected")


def test_a_rejected_key_is_skipped_until_its_secret_changes(caller: Caller) -> None:
    rejected = key("reject")
    credential = caller.add_key("openai", rejected)
    good = caller.add_key("openai", key())
    for _ in range(4):
        assert caller.chat().headers["x-switchboard-credential"] == good
    assert caller.tried(rejected) == 1  # once first in line, then skipped
    still_rejected = key("reject")
    response = caller.user.client.patch(f"/llm-credentials/{credential}", json={"secret": still_rejected})
    assert response.status_code == 200, response.text
    for _ in range(2):  # the new secret gets its turn (and is refused once)
        assert caller.chat().headers["x-switchboard-credential"] == good
    assert caller.tried(still_rejected) == 1


def test_a_rate_limited_key_cools_down_for_its_retry_after(caller: Caller) -> None:
    long_wait, no_wait = key("busy-60"), key("busy-0")
    for secret in (long_wait, key(), no_wait):
        caller.add_key("openai", secret)
    for _ in range(6):  # every call is answered, by the one key that is not busy
        assert caller.chat().parse().choices[0].message.content
    assert caller.tried(long_wait) == 1  # cooled for 60 s after its first 429
    assert caller.tried(no_wait) >= 2  # `Retry-After: 0`: back in line at once


def test_two_failures_keep_a_key_first_in_line_and_the_third_cools_it_down(caller: Caller) -> None:
    down = key("down")
    caller.add_key("openai", down)
    caller.add_key("anthropic", key())
    attempts = [caller.chat().headers["x-switchboard-attempts"] for _ in range(4)]
    assert attempts == ["2", "2", "2", "1"]
    assert caller.tried(down) == 3


def test_when_every_route_cools_down_the_least_recently_failed_is_tried(caller: Caller) -> None:
    a, b = caller.add_key("openai", key("down")), caller.add_key("openai", key("down"))
    model = unique_model()
    firsts = []
    for _ in range(3):  # each call tries both keys: three failures in a row cool both down
        with pytest.raises(openai.InternalServerError) as raised:
            caller.chat(model)
        headers = raised.value.response.headers
        assert headers["x-switchboard-attempts"] == "2"
        firsts.append(caller.records(headers["x-request-id"])[0]["credential_id"])
    with pytest.raises(openai.InternalServerError) as raised:
        caller.chat(model)
    headers = raised.value.response.headers
    assert headers["x-switchboard-attempts"] == "1"
    [record] = caller.records(headers["x-request-id"])
    # In the third call the key tried first failed first: it has waited longest.
    assert record["credential_id"] == firsts[-1]
    assert {a, b} == set(firsts[:2])


def _wait_for(found: Callable[[], list[Any]], timeout: float = 5.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while not (value := found()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return value
