"""The fake provider speaks each wire format well enough for the real clients: the openai SDK and litellm."""

from __future__ import annotations

import functools
import time
import uuid
from typing import Any

import httpx
import openai
import pytest

from switchboard.upstream.guard_sync import ALLOW_PRIVATE
from tests.fakes.provider import FakeProvider
from tests.fakes.script import DEFAULT_REPLY

KEY = "sk-fake-" + "k" * 24
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def sdk(fake_provider: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake_provider.base_url + "/v1", api_key=KEY, max_retries=0, timeout=10)


@pytest.fixture(scope="module")
def litellm() -> Any:
    """litellm with the gateway's offline knobs (no cost-map download, no .env loading)."""
    from switchboard.upstream.litellm_loader import load_litellm

    return load_litellm()


def loopback_allowed(test: Any) -> Any:
    """These tests call litellm directly, outside any gateway call, against the fake provider on loopback.

    litellm's module-level clients are the process's (a gateway built in this process put them on the
    egress guard), and outside a call the guard is strict; here it allows what the test gateways allow.
    """

    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> Any:
        token = ALLOW_PRIVATE.set(True)
        try:
            return await test(*args, **kwargs)
        finally:
            ALLOW_PRIVATE.reset(token)

    return run


MESSAGES = [{"role": "user", "content": "Say hello"}]


# --- OpenAI through the official SDK ---------------------------------------------------------------


def test_openai_sdk_completion_has_the_scripted_reply_usage_and_records_the_key(
    fake_provider: FakeProvider, sdk: openai.OpenAI
) -> None:
    model = unique("gpt")
    fake_provider.script(model, prompt_tokens=21, completion_tokens=5, cached_tokens=3, reasoning_tokens=2)
    completion = sdk.chat.completions.create(model=model, messages=MESSAGES)  # type: ignore[arg-type]
    assert completion.choices[0].message.content == DEFAULT_REPLY
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (21, 5)
    assert completion.usage.prompt_tokens_details.cached_tokens == 3  # type: ignore[union-attr]
    assert completion.usage.completion_tokens_details.reasoning_tokens == 2  # type: ignore[union-attr]
    [seen] = fake_provider.received(model)
    assert seen.api_key == KEY and seen.path == "/v1/chat/completions" and seen.body["messages"] == MESSAGES


def test_count_prompt_bills_a_token_a_cjk_character_and_four_ascii_characters_a_token(
    fake_provider: FakeProvider, sdk: openai.OpenAI
) -> None:
    model = unique("gpt")
    fake_provider.script(model, count_prompt=True)
    messages = [{"role": "user", "content": "漢字" * 500 + "x" * 40}]
    completion = sdk.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]
    assert completion.usage is not None
    # 1,000 CJK characters, 44 ASCII ("user" and the x's) at four a token, 3 for the message
    assert completion.usage.prompt_tokens == 1000 + 11 + 3


def test_openai_sdk_stream_ends_with_a_usage_only_chunk_when_asked(
    fake_provider: FakeProvider, sdk: openai.OpenAI
) -> None:
    model = unique("gpt")
    fake_provider.script(model, reply="one two three", prompt_tokens=4, completion_tokens=3)
    chunks = list(
        sdk.chat.completions.create(
            model=model, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )  # type: ignore
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (4, 3)
    assert all(c.usage is None for c in chunks[:-1])
    [seen] = fake_provider.received(model)
    assert seen.sent[-1] == b"data: [DONE]\n\n"


def test_openai_stream_without_include_usage_has_no_usage_chunk(
    fake_provider: FakeProvider, sdk: openai.OpenAI
) -> None:
    chunks = list(sdk.chat.completions.create(model=unique("gpt"), messages=MESSAGES, stream=True))  # type: ignore
    assert all(c.choices for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_openai_tool_calls_are_echoed_stream_and_not(fake_provider: FakeProvider, sdk: openai.OpenAI) -> None:
    completion = sdk.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS)  # type: ignore
    call = completion.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather" and call.function.arguments == '{"location": "Paris"}'  # type: ignore
    assert completion.choices[0].finish_reason == "tool_calls"
    chunks = list(
        sdk.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, stream=True)
    )  # type: ignore
    arguments = "".join(
        tc.function.arguments or ""
        for c in chunks
        for tc in (c.choices[0].delta.tool_calls or [])  # type: ignore
    )
    assert arguments == '{"location": "Paris"}'


def test_openai_embeddings_and_models(fake_provider: FakeProvider, sdk: openai.OpenAI) -> None:
    result = sdk.embeddings.create(model="text-embedding-3-small", input=["a", "b"])  # base64 on the wire
    assert [len(item.embedding) for item in result.data] == [8, 8]
    assert result.usage.prompt_tokens == 11
    floats = sdk.embeddings.create(model="text-embedding-3-small", input="a", encoding_format="float")
    assert floats.data[0].embedding == pytest.approx(result.data[0].embedding, abs=1e-4)
    assert "gpt-4o-mini" in [m.id for m in sdk.models.list()]


@pytest.mark.parametrize(
    ("fail", "error_class"),
    [
        ("rate_limit", openai.RateLimitError),
        ("invalid_key", openai.AuthenticationError),
        ("forbidden", openai.PermissionDeniedError),
        ("server_error", openai.InternalServerError),
        ("bad_request", openai.BadRequestError),
    ],
)
def test_openai_sdk_raises_the_right_class_for_each_scripted_failure(
    fake_provider: FakeProvider, sdk: openai.OpenAI, fail: str, error_class: type[Exception]
) -> None:
    model = unique("gpt")
    fake_provider.script(model, fail=fail)
    with pytest.raises(error_class) as caught:
        sdk.chat.completions.create(model=model, messages=MESSAGES)  # type: ignore[arg-type]
    if fail == "rate_limit":
        assert caught.value.response.headers["retry-after"] == "7"  # type: ignore[attr-defined]


def test_echo_key_failure_puts_the_sent_key_in_the_message(
    fake_provider: FakeProvider, sdk: openai.OpenAI
) -> None:
    model = unique("gpt")
    fake_provider.enqueue(model, fail="echo_key")
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(model=model, messages=MESSAGES)  # type: ignore[arg-type]
    assert KEY in str(caught.value)
    assert sdk.chat.completions.create(model=model, messages=MESSAGES)  # the queue entry was used once  # type: ignore


def test_broken_stream_drops_the_connection_after_n_events(
    fake_provider: FakeProvider, sdk: openai.OpenAI
) -> None:
    model = unique("gpt")
    fake_provider.script(model, break_after=2)
    seen = []
    with pytest.raises((openai.APIError, httpx.RemoteProtocolError)):
        for chunk in sdk.chat.completions.create(model=model, messages=MESSAGES, stream=True):  # type: ignore
            seen.append(chunk)
    assert len(seen) == 2


def test_slow_first_byte_and_stall_are_felt_by_the_client(fake_provider: FakeProvider) -> None:
    slow, stalled = unique("gpt"), unique("gpt")
    fake_provider.script(slow, first_byte_delay=0.4)
    fake_provider.script(stalled, stall_after=1)
    url = fake_provider.base_url + "/v1/chat/completions"
    started = time.monotonic()
    httpx.post(url, json={"model": slow, "messages": MESSAGES}, timeout=5).raise_for_status()
    assert time.monotonic() - started >= 0.4
    with httpx.stream(
        "POST",
        url,
        json={"model": stalled, "messages": MESSAGES, "stream": True},
        timeout=httpx.Timeout(5, read=0.3),
    ) as response:
        lines = response.iter_lines()
        assert next(lines).startswith("data: ")
        with pytest.raises(httpx.ReadTimeout):
            list(lines)
    assert fake_provider.wait_disconnect_sync(stalled) is not None


def test_endless_stream_notices_the_client_going_away_within_a_second(fake_provider: FakeProvider) -> None:
    model = unique("gpt")
    fake_provider.script(model, endless=True, chunk_delay=0.02)
    with httpx.stream(
        "POST",
        fake_provider.base_url + "/v1/chat/completions",
        json={"model": model, "messages": MESSAGES, "stream": True},
        timeout=5,
    ) as response:
        for count, _ in enumerate(response.iter_lines()):
            if count > 10:
                break
        closed_at = time.monotonic()
    gone = fake_provider.wait_disconnect_sync(model)
    assert gone is not None and gone.at - closed_at < 1.0 and gone.events_sent >= 5


# --- Anthropic and Gemini through litellm's real translation ---------------------------------------


@loopback_allowed
async def test_litellm_anthropic_non_stream_and_stream_report_exact_usage(
    fake_provider: FakeProvider, litellm: Any
) -> None:
    model = unique("claude")
    fake_provider.script(model, prompt_tokens=30, completion_tokens=9, cached_tokens=10)
    common = {
        "model": f"anthropic/{model}",
        "messages": MESSAGES,
        "api_key": KEY,
        "api_base": fake_provider.base_url,
        "max_tokens": 50,
    }
    reply = await litellm.acompletion(**common)
    assert reply.choices[0].message.content == DEFAULT_REPLY
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (30, 9)
    stream = await litellm.acompletion(**common, stream=True, stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == DEFAULT_REPLY
    usages = [c.usage for c in chunks if getattr(c, "usage", None)]
    assert (usages[-1].prompt_tokens, usages[-1].completion_tokens) == (30, 9)
    seen = fake_provider.received(model)
    assert [r.path for r in seen] == ["/v1/messages", "/v1/messages"]
    assert all(r.headers["x-api-key"] == KEY for r in seen)


@loopback_allowed
async def test_litellm_anthropic_tool_use_and_invalid_key(fake_provider: FakeProvider, litellm: Any) -> None:
    model = unique("claude")
    common = {
        "model": f"anthropic/{model}",
        "messages": MESSAGES,
        "api_key": KEY,
        "api_base": fake_provider.base_url,
        "max_tokens": 50,
    }
    # With tools, litellm imports its MCP gateway (needing the absent `mcp` package) unless told not to.
    reply = await litellm.acompletion(**common, tools=TOOLS, _skip_mcp_handler=True)
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"
    fake_provider.script(model, fail="invalid_key")
    with pytest.raises(litellm.AuthenticationError):
        await litellm.acompletion(**common)


@loopback_allowed
async def test_litellm_gemini_non_stream_and_stream_report_exact_usage(
    fake_provider: FakeProvider, litellm: Any
) -> None:
    model = unique("gemini")
    fake_provider.script(model, prompt_tokens=12, completion_tokens=6)
    common = {
        "model": f"gemini/{model}",
        "messages": MESSAGES,
        "api_key": KEY,
        "api_base": fake_provider.base_url + "/v1beta",
    }
    reply = await litellm.acompletion(**common)
    assert reply.choices[0].message.content == DEFAULT_REPLY
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 6)
    stream = await litellm.acompletion(**common, stream=True, stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == DEFAULT_REPLY
    usages = [c.usage for c in chunks if getattr(c, "usage", None)]
    assert (usages[-1].prompt_tokens, usages[-1].completion_tokens) == (12, 6)
    seen = fake_provider.received(model)
    assert [(r.path, r.query) for r in seen] == [
        (f"/v1beta/models/{model}:generateContent", ""),
        (f"/v1beta/models/{model}:streamGenerateContent", "alt=sse"),
    ]
    assert all(r.headers["x-goog-api-key"] == KEY for r in seen)


@loopback_allowed
async def test_litellm_gemini_tool_call_and_invalid_key(fake_provider: FakeProvider, litellm: Any) -> None:
    model = unique("gemini")
    common = {
        "model": f"gemini/{model}",
        "messages": MESSAGES,
        "api_key": KEY,
        "api_base": fake_provider.base_url + "/v1beta",
    }
    # With tools, litellm imports its MCP gateway (needing the absent `mcp` package) unless told not to.
    reply = await litellm.acompletion(**common, tools=TOOLS, _skip_mcp_handler=True)
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"
    fake_provider.script(model, fail="invalid_key")
    with pytest.raises(litellm.AuthenticationError) as caught:  # litellm recognises Gemini's 400
        await litellm.acompletion(**common)
    assert "API_KEY_INVALID" in str(caught.value)


def test_a_chat_cap_above_what_the_model_can_answer_is_refused_as_openai_does(sdk: openai.OpenAI) -> None:
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, max_completion_tokens=16385)
    assert refused.value.code == "invalid_value"
    assert refused.value.param == "max_completion_tokens"
    assert "at most 16384 completion tokens" in refused.value.message
    answered = sdk.chat.completions.create(
        model="gpt-4o-mini", messages=messages, max_completion_tokens=16384
    )
    assert answered.choices[0].message.content == DEFAULT_REPLY
    # A model litellm's map does not know takes any cap.
    sdk.chat.completions.create(model=unique("own"), messages=messages, max_tokens=10**6)
