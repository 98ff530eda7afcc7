"""Chat completions through the official openai SDK, relayed to the fake provider on a real socket."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.llm.conftest import Caller, unique_model
from tests.support.gateway import Gateway

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
        },
    }
]


def test_a_completion_answers_as_openai_would_with_gateway_headers(
    caller: Caller, fake_provider: Any
) -> None:
    model = unique_model()
    fake_provider.script(model, reply="Bonjour.", prompt_tokens=21, completion_tokens=3)
    raw = caller.sdk.chat.completions.with_raw_response.create(
        model=f"openai/{model}", messages=[{"role": "user", "content": "hi"}]
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Bonjour."
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (21, 3)
    assert raw.headers["x-switchboard-model"] == f"openai/{model}"
    assert raw.headers["x-switchboard-credential"] == caller.credential_ids["openai"]
    assert raw.headers["x-request-id"]


def test_the_provider_receives_the_callers_key_and_every_field_unchanged(
    caller: Caller, fake_provider: Any
) -> None:
    model = unique_model()
    extra = {
        "seed": 7,
        "logprobs": True,
        "top_logprobs": 2,
        "n": 2,
        "stop": ["\n"],
        "response_format": {"type": "json_object"},
        "user": "u-1",
        "temperature": 0.25,
        "metadata": {"trace": "abc"},
    }
    caller.user.client.post(
        "/v1/chat/completions",
        json={"model": f"openai/{model}", "messages": [{"role": "user", "content": "hi"}], **extra},
    )
    (seen,) = fake_provider.received(model)
    assert seen.api_key == caller.keys["openai"]
    assert seen.body["model"] == model
    for name, value in extra.items():
        assert seen.body[name] == value


def test_tools_round_trip_through_the_sdk(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    completion = caller.sdk.chat.completions.create(
        model=f"openai/{model}",
        messages=[{"role": "user", "content": "weather?"}],
        tools=TOOLS,  # type: ignore[arg-type]
    )
    call = completion.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert fake_provider.received(model)[0].body["tools"] == TOOLS


def test_a_stream_arrives_chunk_by_chunk_without_usage_unless_asked(
    caller: Caller, fake_provider: Any
) -> None:
    model = unique_model()
    fake_provider.script(model, reply="one two three four")
    chunks = list(
        caller.sdk.chat.completions.create(
            model=f"openai/{model}", messages=[{"role": "user", "content": "count"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert all(c.usage is None for c in chunks)
    # ... while the gateway asked the provider for usage all the same.
    assert fake_provider.received(model)[0].body["stream_options"] == {"include_usage": True}


def test_a_stream_forwards_the_usage_chunk_when_the_client_asks(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    fake_provider.script(model, prompt_tokens=5, completion_tokens=9)
    chunks = list(
        caller.sdk.chat.completions.create(
            model=f"openai/{model}",
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == 1 and (usage[0].prompt_tokens, usage[0].completion_tokens) == (5, 9)


def test_stream_bytes_are_the_providers_bytes_and_end_with_done(caller: Caller, fake_provider: Any) -> None:
    model = unique_model()
    with caller.user.client.stream(
        "POST",
        "/v1/chat/completions",
        json={
            "model": f"openai/{model}",
            "messages": [{"role": "user", "content": "x"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = b"".join(response.iter_bytes())
    sent = b"".join(fake_provider.received(model)[0].sent)
    assert body == sent.replace(b"data: [DONE]\n\n", b"") + b"data: [DONE]\n\n"


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_anthropic_and_gemini_answer_in_openai_format(
    caller: Caller, fake_provider: Any, provider: str
) -> None:
    model = unique_model(provider)
    fake_provider.script(model, reply="Translated answer.", prompt_tokens=13, completion_tokens=4)
    completion = caller.sdk.chat.completions.create(
        model=f"{provider}/{model}", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "Translated answer."
    assert completion.usage is not None and completion.usage.prompt_tokens == 13
    assert fake_provider.received(model)[0].api_key == caller.keys[provider]


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_anthropic_and_gemini_stream_in_openai_format(
    caller: Caller, fake_provider: Any, provider: str
) -> None:
    model = unique_model(provider)
    fake_provider.script(model, reply="streamed words here", prompt_tokens=6, completion_tokens=3)
    chunks = list(
        caller.sdk.chat.completions.create(
            model=f"{provider}/{model}",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed words here"
    usage = [c.usage for c in chunks if c.usage is not None]
    assert usage and usage[-1].completion_tokens == 3


def test_catalog_selectors_resolve_to_the_configured_model(caller: Caller, fake_provider: Any) -> None:
    for selector in ("default", "tag:cheap", "fast", "openai/gpt-4o-mini"):
        raw = caller.sdk.chat.completions.with_raw_response.create(
            model=selector, messages=[{"role": "user", "content": "hi"}]
        )
        assert raw.headers["x-switchboard-model"] == "openai/gpt-4o-mini", selector


def test_malformed_json_is_an_invalid_request_error(caller: Caller) -> None:
    response = caller.user.client.post(
        "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_missing_messages_field_is_a_bad_request_error(caller: Caller) -> None:
    with pytest.raises(openai.BadRequestError):
        caller.sdk.chat.completions.create(model="default", messages=[])


def test_the_sdk_raises_authentication_error_for_a_bad_token(gateway: Gateway) -> None:
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        sdk.chat.completions.create(model="default", messages=[{"role": "user", "content": "x"}])


def test_an_unknown_model_is_not_found_with_model_not_found(caller: Caller) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        caller.sdk.chat.completions.create(model="no-such-alias", messages=[{"role": "user", "content": "x"}])
    assert caught.value.code == "model_not_found"


def test_no_credential_is_a_bad_request_naming_providers(gateway: Gateway, fake_provider: Any) -> None:
    user = gateway.user()
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.chat.completions.create(model="tag:fast", messages=[{"role": "user", "content": "x"}])
    assert caught.value.code == "no_credential"
    assert "openai" in str(caught.value) and "anthropic" in str(caught.value)


def test_a_viewer_may_not_call_models(gateway: Gateway) -> None:
    viewer = gateway.user(role="Viewer")
    response = viewer.client.post(
        "/v1/chat/completions", json={"model": "default", "messages": [{"role": "user", "content": "x"}]}
    )
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"


def test_an_unknown_room_header_is_not_found(caller: Caller) -> None:
    response = caller.user.client.post(
        "/v1/chat/completions",
        headers={"x-working-group-id": "6a1f0e1c-1111-4222-8333-444455556666"},
        json={"model": "default", "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 404


def test_request_id_is_echoed(caller: Caller, fake_provider: Any) -> None:
    response = caller.user.client.post(
        "/v1/chat/completions",
        headers={"x-request-id": "trace-123"},
        json={"model": f"openai/{unique_model()}", "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.headers["x-request-id"] == "trace-123"
