"""The response cache on Anthropic Messages (anthropic SDK) and OpenAI Responses (openai SDK), relayed
and translated, streamed and not (SPEC §23): each replays in its own format; surfaces never share keys."""

from __future__ import annotations

import anthropic
import openai
import pytest

from tests.cache.conftest import ASK, prompt
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import unique_model


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_message_is_a_hit_the_second_time(
    kind: str, anthropic_sdk: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache-msg")
    fake_provider.script(model, reply="Bonjour.", prompt_tokens=21, completion_tokens=3)
    messages = prompt()
    answers = [
        anthropic_sdk.messages.with_raw_response.create(
            model=f"{kind}/{model}",
            max_tokens=64,
            messages=messages,  # type: ignore[arg-type]
            extra_headers=ASK,
        )
        for _ in range(2)
    ]
    assert [a.headers["x-switchboard-cache"] for a in answers] == ["miss", "hit"]
    first, second = (a.parse() for a in answers)
    assert second.model_dump() == first.model_dump()
    assert [getattr(b, "text", None) for b in second.content] == ["Bonjour."]
    assert len(fake_provider.received(model)) == 1


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_message_stream_replays_in_anthropics_events(
    kind: str, anthropic_sdk: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache-msg")
    fake_provider.script(model, reply="one two three", prompt_tokens=8, completion_tokens=3)
    messages = prompt()

    def streamed() -> tuple[str, list[str], str, int]:
        with anthropic_sdk.messages.stream(
            model=f"{kind}/{model}",
            max_tokens=64,
            messages=messages,  # type: ignore[arg-type]
            extra_headers=ASK,
        ) as stream:
            state = stream.response.headers["x-switchboard-cache"]
            kinds = [event.type for event in stream]
            final = stream.get_final_message()
        text = "".join(getattr(b, "text", "") for b in final.content)
        return state, kinds, text, final.usage.output_tokens

    miss, hit = streamed(), streamed()
    assert (miss[0], hit[0]) == ("miss", "hit")
    assert hit[1:] == miss[1:]
    assert hit[1][0] == "message_start" and hit[1][-1] == "message_stop"
    assert hit[2] == "one two three"
    assert len(fake_provider.received(model)) == 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_response_is_a_hit_the_second_time(
    kind: str, openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache-resp")
    fake_provider.script(model, reply="Salut.", prompt_tokens=12, completion_tokens=2)
    question = prompt()[0]["content"]
    answers = [
        openai_sdk.responses.with_raw_response.create(
            model=f"{kind}/{model}", input=question, extra_headers=ASK
        )
        for _ in range(2)
    ]
    assert [a.headers["x-switchboard-cache"] for a in answers] == ["miss", "hit"]
    assert answers[1].parse().output_text == "Salut."
    assert answers[1].http_response.content == answers[0].http_response.content
    assert len(fake_provider.received(model)) == 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_response_stream_replays_in_the_responses_events(
    kind: str, openai_sdk: openai.OpenAI, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache-resp")
    fake_provider.script(model, reply="alpha beta", prompt_tokens=6, completion_tokens=2)
    question = prompt()[0]["content"]

    def streamed() -> tuple[str, list[str], str]:
        with openai_sdk.responses.with_streaming_response.create(
            model=f"{kind}/{model}", input=question, stream=True, extra_headers=ASK
        ) as response:
            state = response.headers["x-switchboard-cache"]
            events = list(response.parse())
        done = [e for e in events if e.type == "response.completed"]
        return state, [e.type for e in events], done[0].response.output_text

    miss, hit = streamed(), streamed()
    assert (miss[0], hit[0]) == ("miss", "hit")
    assert hit[1] == miss[1] and hit[1][0] == "response.created" and hit[1][-1] == "response.completed"
    assert hit[2] == "alpha beta"
    assert len(fake_provider.received(model)) == 1


def test_the_same_question_on_another_surface_is_another_key(
    openai_sdk: openai.OpenAI, anthropic_sdk: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache-surface")
    messages = prompt()
    chat = openai_sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}",
        messages=messages,  # type: ignore[arg-type]
        max_tokens=64,
        extra_headers=ASK,
    )
    message = anthropic_sdk.messages.with_raw_response.create(
        model=f"openai/{model}",
        max_tokens=64,
        messages=messages,  # type: ignore[arg-type]
        extra_headers=ASK,
    )
    assert chat.headers["x-switchboard-cache"] == message.headers["x-switchboard-cache"] == "miss"
    assert len(fake_provider.received(model)) == 2


def test_a_malformed_cache_header_on_messages_is_anthropics_400(
    anthropic_sdk: anthropic.Anthropic, fake_provider: FakeProvider
) -> None:
    model = unique_model("cache-msg")
    with pytest.raises(anthropic.BadRequestError) as raised:
        anthropic_sdk.messages.create(
            model=f"anthropic/{model}",
            max_tokens=64,
            messages=prompt(),  # type: ignore[arg-type]
            extra_headers={"x-switchboard-cache": "ttl=soon"},
        )
    assert raised.value.response.json()["error"]["type"] == "invalid_request_error"
    assert "x-switchboard-cache" in raised.value.response.json()["error"]["message"]
    assert fake_provider.received(model) == []
