"""The response cache on /v1/chat/completions through the openai SDK (SPEC §23): opt-in by catalog
model, alias or header; a hit answers the stored answer with no provider call, metered at cost 0."""

from __future__ import annotations

import time
from typing import Any

import openai
import orjson
import pytest

from tests.cache.conftest import ASK, CACHED_ALIAS, CACHED_MODEL, PLAIN_MODEL, prompt
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import unique_model
from tests.support.gateway import Gateway, User


def records(user: User, request_id: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        data = user.client.get("/usage/me", params={"limit": 500}).json()["data"]
        found = [r for r in data if r["request_id"] == request_id]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def asked(fake_provider: FakeProvider, model: str, messages: list[dict[str, str]]) -> int:
    """How many requests reached the provider with this question."""
    return sum(1 for r in fake_provider.received(model) if (r.body or {}).get("messages") == messages)


def test_a_repeated_call_is_a_hit_with_the_same_answer_and_no_provider_call(
    openai_sdk: openai.OpenAI, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache")
    fake_provider.script(model, reply="Stored once.", prompt_tokens=13, completion_tokens=5)
    messages = prompt()
    first = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}",
        messages=messages,
        extra_headers=ASK,  # type: ignore[arg-type]
    )
    second = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}",
        messages=messages,
        extra_headers=ASK,  # type: ignore[arg-type]
    )
    assert first.headers["x-switchboard-cache"] == "miss"
    assert second.headers["x-switchboard-cache"] == "hit"
    assert second.http_response.content == first.http_response.content
    assert second.parse().choices[0].message.content == "Stored once."
    assert second.headers["x-switchboard-model"] == f"openai/{model}"
    assert asked(fake_provider, model, messages) == 1
    [hit] = records(user, second.headers["x-request-id"])
    assert hit["status"] == "ok" and hit["cache_hit"] is True and hit["cost"] == "0"
    assert (hit["prompt_tokens"], hit["completion_tokens"]) == (13, 5)
    [miss] = records(user, first.headers["x-request-id"])
    assert miss["cache_hit"] is False


def test_a_hit_is_free_where_the_miss_was_priced(
    openai_sdk: openai.OpenAI, user: User, fake_provider: FakeProvider
) -> None:
    fake_provider.script(CACHED_MODEL, prompt_tokens=1000, completion_tokens=500)
    messages = prompt()
    first = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{CACHED_MODEL}", messages=messages
    )  # type: ignore[arg-type]
    second = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{CACHED_MODEL}", messages=messages
    )  # type: ignore[arg-type]
    assert (first.headers["x-switchboard-cache"], second.headers["x-switchboard-cache"]) == ("miss", "hit")
    [miss] = records(user, first.headers["x-request-id"])
    [hit] = records(user, second.headers["x-request-id"])
    assert miss["cost"] == str(1000 * 1000 + 500 * 2000)  # 1 and 2 per million tokens, in nano-units
    assert hit["cost"] == "0" and hit["priced"] is True
    assert (hit["prompt_tokens"], hit["completion_tokens"]) == (1000, 500)


def test_a_stream_is_replayed_as_a_stream_with_the_usage_chunk_only_when_asked(
    openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache")
    fake_provider.script(model, reply="one two three", prompt_tokens=9, completion_tokens=3)
    messages = prompt()

    def streamed(include_usage: bool) -> tuple[str, list[Any], str]:
        with openai_sdk.chat.completions.with_streaming_response.create(
            model=f"openai/{model}",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": include_usage},
            extra_headers=ASK,
        ) as response:
            state = response.headers["x-switchboard-cache"]
            chunks = list(response.parse())
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        return state, [c.usage for c in chunks if c.usage is not None], text

    miss = streamed(True)
    without = streamed(False)
    with_usage = streamed(True)
    assert miss[0] == "miss" and without[0] == "hit" and with_usage[0] == "hit"
    assert miss[2] == without[2] == with_usage[2] == "one two three"
    assert without[1] == []
    assert [(u.prompt_tokens, u.completion_tokens) for u in with_usage[1]] == [(9, 3)]
    assert asked(fake_provider, model, messages) == 1


def test_stream_user_and_metadata_are_not_in_the_key_but_the_answer_form_and_temperature_are(
    openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache")
    messages = prompt()

    def call(**extra: Any) -> str:
        raw = openai_sdk.chat.completions.with_raw_response.create(
            model=f"openai/{model}",
            messages=messages,
            extra_headers=ASK,
            **extra,  # type: ignore[arg-type]
        )
        return str(raw.headers["x-switchboard-cache"])

    assert call(user="alice") == "miss"
    assert call(user="bob", metadata={"run": "2"}) == "hit"
    assert call(temperature=0.5) == "miss"
    assert call(temperature=0.5, user="carol") == "hit"
    assert asked(fake_provider, model, messages) == 2


def test_the_catalog_alias_turns_caching_on_and_no_store_turns_it_off(
    openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    messages = prompt()
    by_alias = [
        openai_sdk.chat.completions.with_raw_response.create(model=CACHED_ALIAS, messages=messages)  # type: ignore[arg-type]
        for _ in range(2)
    ]
    assert [r.headers["x-switchboard-cache"] for r in by_alias] == ["miss", "hit"]
    refused = openai_sdk.chat.completions.with_raw_response.create(
        model=CACHED_ALIAS,
        messages=messages,  # type: ignore[arg-type]
        extra_headers={"x-switchboard-cache": "no-store"},
    )
    assert "x-switchboard-cache" not in refused.headers
    assert asked(fake_provider, PLAIN_MODEL, messages) == 2


def test_a_call_the_cache_does_not_apply_to_says_nothing_and_always_reaches_the_provider(
    gateway: Gateway, openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    messages = prompt()
    answers = [
        openai_sdk.chat.completions.with_raw_response.create(model=f"openai/{PLAIN_MODEL}", messages=messages)  # type: ignore[arg-type]
        for _ in range(2)
    ]
    assert all("x-switchboard-cache" not in r.headers for r in answers)
    assert asked(fake_provider, PLAIN_MODEL, messages) == 2


@pytest.mark.parametrize("value", ["ttl=0", "ttl=abc", "ttl=", "ttl=604801", "forever", "ttl=-5"])
def test_a_malformed_cache_header_is_a_400_naming_it(
    openai_sdk: openai.OpenAI, fake_provider: FakeProvider, value: str
) -> None:
    model = unique_model("cache")
    with pytest.raises(openai.BadRequestError) as raised:
        openai_sdk.chat.completions.create(
            model=f"openai/{model}",
            messages=prompt(),  # type: ignore[arg-type]
            extra_headers={"x-switchboard-cache": value},
        )
    error = orjson.loads(raised.value.response.content)["error"]
    assert error["param"] == "x-switchboard-cache"
    assert "x-switchboard-cache" in error["message"]
    assert fake_provider.received(model) == []


def test_a_provider_error_is_not_stored(openai_sdk: openai.OpenAI, fake_provider: FakeProvider) -> None:
    model = unique_model("cache")
    messages = prompt()
    fake_provider.enqueue(model, fail="server_error")
    with pytest.raises(openai.APIStatusError):
        openai_sdk.chat.completions.create(model=f"openai/{model}", messages=messages, extra_headers=ASK)  # type: ignore[arg-type]
    fake_provider.script(model, reply="Now fine.")
    after = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}",
        messages=messages,
        extra_headers=ASK,  # type: ignore[arg-type]
    )
    assert after.headers["x-switchboard-cache"] == "miss"
    assert after.parse().choices[0].message.content == "Now fine."


def test_a_stream_broken_mid_way_is_not_stored(
    openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache")
    messages = prompt()
    fake_provider.enqueue(model, reply="a b c d e f", break_after=2)
    with (
        pytest.raises(openai.APIError),
        openai_sdk.chat.completions.with_streaming_response.create(
            model=f"openai/{model}",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            extra_headers=ASK,
        ) as response,
    ):
        list(response.parse())
    again = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}",
        messages=messages,
        stream=True,
        extra_headers=ASK,  # type: ignore[arg-type]
    )
    assert again.headers["x-switchboard-cache"] == "miss"
