"""A provider's error inside a 200 stream (SPEC §5, §8, §14): OpenAI's `data: {"error": …}` chunk
reaches the client of the byte relay as it came, once, and the call's usage record says `error` with
the code the gateway's adapters record for the same failure. Content that merely says "error" is
content. And a failure that arrives in the same read as the usage before it keeps the provider's
count (not an estimate)."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes import anthropic_wire, gemini_wire, openai_wire
from tests.fakes.provider import FakeProvider
from tests.fakes.script import Script
from tests.llm.conftest import (
    credentialed_user,
    records_of_model,
    unique_model,
)
from tests.support.gateway import Gateway, User
from tests.support.sdks import anthropic_client, openai_client

HI = [{"role": "user", "content": "hi"}]
OVERLOADED = "The server had an error while processing your request. Sorry about that!"


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    return make_gateway(default_test_config(fake_provider.base_url))


@pytest.fixture(scope="module")
def user(gateway: Gateway, fake_provider: FakeProvider) -> User:
    return credentialed_user(gateway, fake_provider, ("openai", "anthropic", "gemini"))


def sdk(gateway: Gateway, user: User) -> openai.OpenAI:
    return openai_client(gateway, user)


def chat_chunks(model: str, reply: str) -> list[bytes]:
    """OpenAI's chunks for `reply` (with `"usage":null`, as the gateway always asks for usage),
    without the finish chunk, the usage chunk and [DONE]."""
    body = {"model": model, "stream_options": {"include_usage": True}}
    return list(openai_wire.chat_events(Script(reply=reply), body, "chatcmpl-broken"))[:-3]


def stream_texts(client: openai.OpenAI, model: str) -> list[str]:
    texts: list[str] = []
    for chunk in client.chat.completions.create(model=model, messages=HI, stream=True):  # type: ignore[arg-type]
        if chunk.choices and chunk.choices[0].delta.content:
            texts.append(chunk.choices[0].delta.content)
    return texts


def test_an_openai_error_chunk_reaches_the_client_as_it_came_and_is_recorded_as_the_failure(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    relayed, adapted = unique_model("relayed"), unique_model("adapted")
    error = openai_wire.stream_error(OVERLOADED)
    fake_provider.script(relayed, answer_events=[*chat_chunks(relayed, "Hel lo"), error])
    # The same failure from Gemini, through the gateway's own adapter: the code to record.
    started = gemini_wire.sse(gemini_wire.response([gemini_wire.text_part("Hel")], finish=None))
    gemini_error = gemini_wire.sse({"error": {"code": 500, "message": OVERLOADED, "status": "INTERNAL"}})
    fake_provider.script(adapted, answer_events=[started, gemini_error])

    client = sdk(gateway, user)
    texts: list[str] = []
    with pytest.raises(openai.APIError) as raised:
        texts.extend(stream_texts(client, f"openai/{relayed}"))
    assert OVERLOADED in str(raised.value)
    # Byte for byte: the provider's error chunk is the stream's last, once, and no [DONE] follows.
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        json={"model": f"openai/{relayed}", "messages": HI, "stream": True},
        headers={"authorization": f"Bearer {user.token}"},
    ) as response:
        raw = response.read()
    assert raw.endswith(error) and raw.count(b'"error"') == 1
    assert b"[DONE]" not in raw

    with pytest.raises(openai.APIError):
        stream_texts(client, f"gemini/{adapted}")
    client.close()

    [reference] = records_of_model(user, adapted)
    assert (reference["status"], reference["error_code"]) == ("error", "LLM_FAILED")
    first, second = records_of_model(user, relayed, count=2)
    for record in (first, second):
        assert (record["status"], record["endpoint"], record["stream"]) == ("error", "chat.completions", True)
        assert record["error_code"] == reference["error_code"]


def test_a_rate_limit_error_chunk_is_recorded_as_a_rate_limit(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("limited")
    error = openai_wire.stream_error("Rate limit reached for requests", "requests", "rate_limit_exceeded")
    fake_provider.script(model, answer_events=[*chat_chunks(model, "Hel lo"), error])
    client = sdk(gateway, user)
    with pytest.raises(openai.APIError) as raised:
        stream_texts(client, f"openai/{model}")
    client.close()
    assert "Rate limit reached" in str(raised.value)
    [record] = records_of_model(user, model)
    assert (record["status"], record["error_code"]) == ("error", "RATE_LIMITED")


def test_content_that_says_error_is_content(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("wordy")
    reply = 'error "error" {"error": {"message": "x"}} error'
    fake_provider.script(model, reply=reply)
    client = sdk(gateway, user)
    assert "".join(stream_texts(client, f"openai/{model}")) == reply
    client.close()
    [record] = records_of_model(user, model)
    assert (record["status"], record["error_code"], record["prompt_tokens"]) == ("ok", None, 11)


def test_a_failure_in_the_same_read_as_the_usage_before_it_keeps_the_providers_count(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    """message_start (1234 input tokens), a text delta and Anthropic's error event in one write: one
    read of the gateway's. Relayed (/v1/messages) and through the adapter (/v1/chat/completions)."""
    relayed, adapted = unique_model("relayed-usage"), unique_model("adapted-usage")
    answer = anthropic_wire.message(
        [anthropic_wire.text("Hel")], usage={"input_tokens": 1234, "output_tokens": 5}
    )
    overloaded = anthropic_wire.error_event("overloaded_error", "Overloaded")
    one_read = b"".join([*anthropic_wire.stream_of(answer)[:4], overloaded])
    fake_provider.script(relayed, answer_events=[one_read])
    fake_provider.script(adapted, answer_events=[one_read])

    messages = anthropic_client(gateway, user)
    texts: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError),
        messages.messages.stream(model=f"anthropic/{relayed}", max_tokens=20, messages=HI) as stream,
    ):
        texts.extend(stream.text_stream)
    messages.close()
    assert texts == ["Hel"]

    client = sdk(gateway, user)
    with pytest.raises(openai.APIError):
        stream_texts(client, f"anthropic/{adapted}")
    client.close()

    for model in (relayed, adapted):
        [record] = records_of_model(user, model)
        assert (record["status"], record["prompt_tokens"]) == ("error", 1234), record
        assert record["usage_estimated"] is False


@pytest.mark.parametrize("usage_null", [False, True], ids=["openrouter", "with-usage-null"])
def test_openrouters_error_chunk_mid_stream_ends_the_stream_and_is_recorded_as_the_failure(
    usage_null: bool, gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    """OpenRouter reports a failure after the first tokens as an ordinary chunk with a top-level
    `error` (its `code` an HTTP status) and `"finish_reason":"error"`; with or without OpenAI's
    trailing `"usage":null`, the gateway's fast path must not take it for content."""
    model = unique_model("openrouter")
    error = openai_wire.openrouter_stream_error("gen-1", model, 502, "Provider disconnected unexpectedly")
    if usage_null:
        error = error.removesuffix(b"}\n\n") + b',"usage":null}\n\n'
    fake_provider.script(model, answer_events=[*chat_chunks(model, "Hel lo"), error, b"data: [DONE]\n\n"])
    client = sdk(gateway, user)
    texts: list[str] = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in client.chat.completions.create(model=f"openai/{model}", messages=HI, stream=True):  # type: ignore[arg-type]
            texts.extend(c.delta.content for c in chunk.choices if c.delta.content)
    client.close()
    assert texts == ["Hel ", "lo"] and "Provider disconnected" in str(raised.value)
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        json={"model": f"openai/{model}", "messages": HI, "stream": True},
        headers={"authorization": f"Bearer {user.token}"},
    ) as response:
        raw = response.read()
    assert raw.endswith(error) and raw.count(b'"error"') == 2  # the key, and the finish reason
    assert b"[DONE]" not in raw
    for record in records_of_model(user, model, count=2):
        assert (record["status"], record["error_code"]) == ("error", "LLM_FAILED")


@pytest.mark.parametrize(
    "odd",
    [
        b"data: this is not json\n\n",
        b'data: {"choices": [{"index": 0, "delta": {"content": "cut\n\n',
        b"data: <html>502</html>\n\n",
    ],
)
def test_an_event_that_is_not_json_is_relayed_and_the_record_says_upstream_malformed(
    gateway: Gateway, user: User, fake_provider: FakeProvider, odd: bytes
) -> None:
    model = unique_model("malformed")
    body = {"model": model, "stream_options": {"include_usage": True}}
    events = list(openai_wire.chat_events(Script(reply="one two"), body, "chatcmpl-odd"))
    fake_provider.script(model, answer_events=[*events[:2], odd, *events[2:]])
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        json={"model": f"openai/{model}", "messages": HI, "stream": True},
        headers={"authorization": f"Bearer {user.token}"},
    ) as response:
        raw = response.read()
    assert odd in raw and raw.endswith(b"data: [DONE]\n\n")  # passed on as it came
    [record] = records_of_model(user, model)
    assert (record["status"], record["error_code"]) == ("ok", "upstream_malformed")
    # Still metered: the provider's own count.
    assert (record["prompt_tokens"], record["completion_tokens"], record["usage_estimated"]) == (11, 7, False)


def test_a_well_formed_stream_is_not_flagged(
    gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model("fine")
    assert "".join(stream_texts(sdk(gateway, user), f"openai/{model}")) == "Hello from the fake provider."
    [record] = records_of_model(user, model)
    assert (record["status"], record["error_code"]) == ("ok", None)
