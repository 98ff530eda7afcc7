"""Every other litellm provider (SPEC §15) answers in OpenAI's format through litellm, on the guarded pool."""

from __future__ import annotations

import contextlib
import logging

import orjson
import pytest

from switchboard.errors import (
    BadRequest,
    RateLimited,
    SwitchboardError,
    Unprocessable,
    UpstreamBadRequest,
    UpstreamCredentialRejected,
    UpstreamFailed,
)
from switchboard.kit.secret import Secret
from switchboard.upstream import providers
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.litellm_loader import load_litellm
from switchboard.upstream.translated import credential_kwargs
from switchboard.upstream.types import UpstreamTarget, Usage
from tests.fakes.provider import FakeProvider
from tests.fakes.script import DEFAULT_REPLY
from tests.upstream.conftest import KEY, MESSAGES, unique
from tests.upstream.raw_server import RawProvider

AZURE_VERSION = "2024-10-21"
AZURE_SECRET = Secret(orjson.dumps({"api_key": KEY, "api_version": AZURE_VERSION}).decode())
BODY = {"messages": MESSAGES, "max_tokens": 20}
FAILURES: dict[str, type[SwitchboardError]] = {
    "unauthorized": UpstreamCredentialRejected,
    "forbidden": UpstreamCredentialRejected,
    "rate_limit": RateLimited,
    "server_error": UpstreamFailed,
    "bad_request": UpstreamBadRequest,
    "echo_key": UpstreamBadRequest,
}


def long_tail(fake: FakeProvider, kind: str, model: str) -> UpstreamTarget:
    """A credential at the fake: azure's base_url is the resource endpoint, the others' an API base."""
    if kind == "azure":
        return UpstreamTarget("azure", model, AZURE_SECRET, fake.base_url, allow_private=True)
    return UpstreamTarget(kind, model, Secret(KEY), fake.base_url + "/v1", allow_private=True)


def text_of(events: list[bytes]) -> str:
    chunks = [orjson.loads(event[6:]) for event in events]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def test_the_kind_list_is_the_pinned_litellms_own() -> None:
    litellm = load_litellm()
    assert tuple(sorted(p.value for p in litellm.provider_list)) == providers.LITELLM_KINDS
    named = set(providers.SECRET_SHAPES) | providers.BORROWS_HOST_IDENTITY | providers.NEEDS_BASE_URL
    assert named <= set(providers.LONG_TAIL)  # no typo makes a rule silently apply to nothing


# mistral goes through litellm's own HTTP handler; deepinfra is one of the OpenAI-compatible kinds.
@pytest.mark.parametrize("kind", ["mistral", "deepinfra", "azure"])
async def test_a_long_tail_completion_is_openai_json_with_the_providers_usage(
    upstream: UpstreamClient, fake_provider: FakeProvider, kind: str
) -> None:
    model = unique(kind)
    fake_provider.script(model, prompt_tokens=30, completion_tokens=9)
    reply = await upstream.chat(long_tail(fake_provider, kind, model), {**BODY, "model": "alias"})
    body = orjson.loads(reply.body)
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == DEFAULT_REPLY
    assert reply.usage == Usage(prompt_tokens=30, completion_tokens=9)
    [seen] = fake_provider.received(model)
    assert seen.api_key == KEY and seen.body["messages"] == MESSAGES
    if kind != "azure":
        assert (seen.path, seen.body["model"]) == ("/v1/chat/completions", model)


async def test_azure_is_called_at_its_deployment_path_with_api_key_and_api_version(
    upstream: UpstreamClient, fake_provider: FakeProvider
) -> None:
    deployment = unique("gpt-4o-deployment")
    await upstream.chat(long_tail(fake_provider, "azure", deployment), BODY)
    [seen] = fake_provider.received(deployment)
    assert seen.path == f"/openai/deployments/{deployment}/chat/completions"
    assert seen.query == f"api-version={AZURE_VERSION}"
    assert seen.headers["api-key"] == KEY and "authorization" not in seen.headers


@pytest.mark.parametrize("kind", ["groq", "azure"])
async def test_a_long_tail_stream_asks_for_usage_and_flags_the_usage_only_chunk(
    upstream: UpstreamClient, fake_provider: FakeProvider, kind: str
) -> None:
    model = unique(kind)
    fake_provider.script(model, prompt_tokens=12, completion_tokens=6)
    stream = upstream.chat_stream(long_tail(fake_provider, kind, model), {**BODY, "stream": True})
    events = [event async for event in stream]
    assert text_of([e.data for e in events]) == DEFAULT_REPLY
    assert [e.is_usage_only for e in events][-1] is True and not any(e.is_usage_only for e in events[:-1])
    assert stream.usage == Usage(prompt_tokens=12, completion_tokens=6)
    [seen] = fake_provider.received(model)
    assert seen.stream and seen.body["stream_options"] == {"include_usage": True}


async def test_mistrals_stream_usage_comes_from_its_last_chunk_unasked(
    upstream: UpstreamClient, fake_provider: FakeProvider
) -> None:
    # Mistral takes no stream_options (litellm sends none) and reports usage in its last chunk.
    model = unique("mistral")

    def chunk(delta: dict[str, str], finish: str | None = None, **extra: object) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        payload = {"id": "cmpl-m", "object": "chat.completion.chunk", "created": 1, "model": model}
        return b"data: " + orjson.dumps({**payload, "choices": [choice], **extra}) + b"\n\n"

    usage = {"prompt_tokens": 21, "total_tokens": 26, "completion_tokens": 5}
    fake_provider.script(
        model,
        answer_events=[
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Bonjour "}),
            chunk({"content": "le monde"}),
            chunk({"content": ""}, "stop", usage=usage),
            b"data: [DONE]\n\n",
        ],
    )
    stream = upstream.chat_stream(long_tail(fake_provider, "mistral", model), {**BODY, "stream": True})
    events = [event async for event in stream]
    assert text_of([e.data for e in events]) == "Bonjour le monde"
    assert stream.usage == Usage(prompt_tokens=21, completion_tokens=5)
    [seen] = fake_provider.received(model)
    assert "stream_options" not in seen.body


@pytest.mark.parametrize("kind", ["mistral", "azure"])
@pytest.mark.parametrize("fail", list(FAILURES))
async def test_long_tail_failures_map_to_the_gateways_errors_without_the_key(
    upstream: UpstreamClient,
    fake_provider: FakeProvider,
    caplog: pytest.LogCaptureFixture,
    kind: str,
    fail: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    model = unique(kind)
    fake_provider.script(model, fail=fail)
    with pytest.raises(FAILURES[fail]) as caught:
        await upstream.chat(long_tail(fake_provider, kind, model), BODY)
    assert type(caught.value) is FAILURES[fail]
    if fail == "rate_limit":
        assert caught.value.headers == {"Retry-After": "7"}
    texts = [str(caught.value), caught.value.message, *(r.getMessage() for r in caplog.records)]
    assert not any(KEY in text or AZURE_SECRET.reveal() in text for text in texts)


async def test_a_json_secrets_fields_are_scrubbed_from_provider_text_whatever_their_shape(
    upstream: UpstreamClient, fake_provider: FakeProvider
) -> None:
    model = unique("azure")
    key = "azure-7f3e9b2c1d"  # too short and plain for the key-shaped patterns to catch
    secret = Secret(orjson.dumps({"api_key": key, "api_version": AZURE_VERSION}).decode())
    fake_provider.script(model, fail="echo_key")
    target = UpstreamTarget("azure", model, secret, fake_provider.base_url, allow_private=True)
    with pytest.raises(UpstreamBadRequest) as caught:
        await upstream.chat(target, BODY)
    assert "is not allowed" in caught.value.message and key not in caught.value.message


async def test_a_long_tail_stream_failure_before_the_first_event_is_raised_from_it(
    upstream: UpstreamClient, fake_provider: FakeProvider
) -> None:
    model = unique("azure")
    fake_provider.script(model, fail="unauthorized")
    stream = upstream.chat_stream(long_tail(fake_provider, "azure", model), {**BODY, "stream": True})
    with pytest.raises(UpstreamCredentialRejected):
        await anext(stream)


@pytest.mark.parametrize("kind", ["mistral", "azure"])
async def test_litellm_kwargs_in_the_body_cannot_redirect_the_call_or_swap_the_key(
    upstream: UpstreamClient, fake_provider: FakeProvider, kind: str
) -> None:
    model = unique(kind)
    body = {
        **BODY,
        "api_base": "http://203.0.113.9",
        "base_url": "http://203.0.113.9",
        "api_key": "other",
        "api_version": "1999-01-01",
        "aws_region_name": "moon-1",
        "extra_headers": {"api-key": "other"},
        "mock_response": "pwned",
    }
    reply = await upstream.chat(long_tail(fake_provider, kind, model), body)
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"] == DEFAULT_REPLY
    [seen] = fake_provider.received(model)
    assert seen.api_key == KEY
    assert "1999" not in seen.query and not {"api_base", "api_key", "mock_response"} & set(seen.body)


async def test_an_azure_secret_without_api_version_fails_before_any_call(
    upstream: UpstreamClient, fake_provider: FakeProvider
) -> None:
    # A deployment credential's secret is read from its environment at call time, unchecked before.
    model = unique("azure")
    target = UpstreamTarget("azure", model, Secret(f'{{"api_key": "{KEY}"}}'), fake_provider.base_url, True)
    with pytest.raises(Unprocessable) as caught:
        await upstream.chat(target, BODY)
    assert "api_version" in caught.value.message and KEY not in caught.value.message
    assert fake_provider.received(model) == []


def test_a_bedrock_secret_becomes_litellms_aws_arguments_and_no_api_key() -> None:
    fields = {"aws_access_key_id": "AKIAEXAMPLE1", "aws_secret_access_key": KEY, "aws_region_name": "eu-1"}
    target = UpstreamTarget("bedrock", "anthropic.claude-3-haiku", Secret(orjson.dumps(fields).decode()))
    assert credential_kwargs(target) == fields
    assert credential_kwargs(UpstreamTarget("groq", "llama", Secret(KEY))) == {"api_key": KEY}


async def test_an_unknown_provider_kind_is_a_bad_request(upstream: UpstreamClient) -> None:
    with pytest.raises(BadRequest):
        await upstream.chat(UpstreamTarget("no-such-provider", "m", Secret(KEY)), BODY)


def _secret_for(kind: str) -> Secret:
    shape = providers.SECRET_SHAPES.get(kind)
    if shape is None:
        return Secret(KEY)
    values = {name: "us-east-1" if name == "aws_region_name" else KEY for name in shape.required}
    return Secret(orjson.dumps(values).decode())


async def test_no_offered_long_tail_kind_reaches_a_forbidden_address(upstream: UpstreamClient) -> None:
    """Each kind's call to a loopback base_url must be refused by our guard, not made by litellm on a
    connection of its own (the kinds that do that are not offered: providers.UNGUARDED). Catches a
    litellm upgrade that stops using the client we hand it."""
    raw = RawProvider(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
    skipped = providers.BORROWS_HOST_IDENTITY
    leaked = []
    async with raw.running() as base_url:
        for kind in providers.LONG_TAIL:
            if kind in skipped:
                continue
            target = UpstreamTarget(kind, "some-model", _secret_for(kind), base_url, allow_private=False)
            before = raw.connections
            with contextlib.suppress(SwitchboardError):
                await upstream.chat(target, BODY)
            if raw.connections != before:
                leaked.append(kind)
    assert leaked == []
