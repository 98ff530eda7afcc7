"""Provider failures become the gateway's typed errors, and no key survives in their text or the logs."""

from __future__ import annotations

import logging
import socket

import pytest

from switchboard.errors import (
    NotFound,
    RateLimited,
    SwitchboardError,
    UpstreamBadRequest,
    UpstreamCredentialRejected,
    UpstreamFailed,
)
from switchboard.kit.secret import Secret
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.provider_errors import from_response, scrub
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import KEY, MESSAGES, MakeTarget, unique

PROVIDERS = ["openai", "anthropic", "gemini"]
EXPECTED: dict[str, type[SwitchboardError]] = {
    "rate_limit": RateLimited,
    "invalid_key": UpstreamCredentialRejected,  # Gemini's is a 400 with API_KEY_INVALID
    "unauthorized": UpstreamCredentialRejected,
    "forbidden": UpstreamCredentialRejected,
    "server_error": UpstreamFailed,
    "bad_request": UpstreamBadRequest,
    "echo_key": UpstreamBadRequest,
}


def assert_no_key(error: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    assert KEY not in str(error) and KEY not in repr(error.args)
    assert KEY not in getattr(error, "message", "")
    assert all(
        KEY not in record.getMessage() and KEY not in str(record.exc_info) for record in caplog.records
    )
    assert error.__suppress_context__ or error.__context__ is None  # litellm's text is not chained


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fail", list(EXPECTED))
async def test_each_failure_maps_to_its_error_non_stream(
    upstream: UpstreamClient,
    fake_provider: FakeProvider,
    target: MakeTarget,
    caplog: pytest.LogCaptureFixture,
    provider: str,
    fail: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    model = unique(provider)
    fake_provider.script(model, fail=fail)
    with pytest.raises(EXPECTED[fail]) as caught:
        await upstream.chat(target(provider, model), {"messages": MESSAGES, "max_tokens": 5})
    assert type(caught.value) is EXPECTED[fail]
    assert_no_key(caught.value, caplog)
    if fail == "rate_limit":
        assert caught.value.headers == {"Retry-After": "7"}
    if fail == "echo_key":
        assert "redacted" in caught.value.message.lower()  # by us, or already by litellm
    assert len(fake_provider.received(model)) == 1  # no retries behind the caller's back


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fail", ["rate_limit", "invalid_key", "server_error", "echo_key"])
async def test_each_failure_maps_to_its_error_before_the_first_chunk(
    upstream: UpstreamClient,
    fake_provider: FakeProvider,
    target: MakeTarget,
    caplog: pytest.LogCaptureFixture,
    provider: str,
    fail: str,
) -> None:
    model = unique(provider)
    fake_provider.script(model, fail=fail)
    stream = upstream.chat_stream(target(provider, model), {"messages": MESSAGES, "max_tokens": 5})
    with pytest.raises(EXPECTED[fail]) as caught:
        await anext(stream)
    assert_no_key(caught.value, caplog)
    if fail == "rate_limit":
        assert caught.value.headers == {"Retry-After": "7"}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_connection_dropped_mid_stream_raises_after_the_events_already_sent(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, break_after=4)
    stream = upstream.chat_stream(target(provider, model), {"messages": MESSAGES, "max_tokens": 5})
    received = []
    with pytest.raises(UpstreamFailed):
        async for event in stream:
            received.append(event)
    assert received  # the failure came after the first chunk: the caller sends an error event


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_body_cut_short_is_an_upstream_failure(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget, provider: str
) -> None:
    model = unique(provider)
    fake_provider.script(model, break_after=0)
    with pytest.raises(UpstreamFailed):
        await upstream.chat(target(provider, model), {"messages": MESSAGES, "max_tokens": 5})


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_refused_connection_is_an_upstream_failure(
    upstream: UpstreamClient, target: MakeTarget, provider: str
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    base = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    with pytest.raises(UpstreamFailed) as caught:
        await upstream.chat(target(provider, "m", base_url=base), {"messages": MESSAGES, "max_tokens": 5})
    assert caught.value.status == 502


def test_a_provider_404_is_model_not_found() -> None:
    error = from_response(404, {}, b'{"error": {"message": "The model x does not exist"}}', None)
    assert isinstance(error, NotFound) and error.openai_code == "model_not_found"


def test_retry_after_ms_is_rounded_up_to_seconds() -> None:
    error = from_response(429, {"retry-after-ms": "1500"}, b"{}", None)
    assert error.headers == {"Retry-After": "2"}


@pytest.mark.parametrize(
    "text",
    [
        "key sk-proj-abcdefgh12345678 refused",
        "Incorrect API key provided: sk-abc***********wxyz.",
        "x-api-key: sk-ant-api03-QWERTY123456",
        "AIzaSyA1234567890abcdefghijklmnopqrstu is invalid",
        "Authorization: Bearer eyJhbGciOi.abc.def",
        "url?key=hunter2hunter2&alt=sse",
        'payload {"api_key": "plainsecretvalue"}',
        "token a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8 leaked",
    ],
)
def test_scrub_removes_anything_shaped_like_a_key(text: str) -> None:
    cleaned = scrub(text)
    for secret in (
        "abcdefgh1234",
        "wxyz",
        "QWERTY",
        "AIzaSy",
        "eyJhbG",
        "hunter2",
        "plainsecret",
        "a1b2c3d4e5f6",
    ):
        assert secret not in cleaned
    assert "[redacted]" in cleaned


def test_scrub_removes_the_exact_key_in_any_spelling_and_keeps_the_rest() -> None:
    secret = Secret("my key/with+odd=chars")
    text = "rejected my key/with+odd=chars (my%20key%2Fwith%2Bodd%3Dchars) for model claude-3-5-haiku"
    assert scrub(text, secret) == "rejected [redacted] ([redacted]) for model claude-3-5-haiku"


@pytest.mark.parametrize("fail", ["rate_limit", "invalid_key", "server_error", "echo_key"])
async def test_gemini_embedding_failures_map_like_completions(
    upstream: UpstreamClient,
    fake_provider: FakeProvider,
    target: MakeTarget,
    caplog: pytest.LogCaptureFixture,
    fail: str,
) -> None:
    model = unique("gemini-embed")
    fake_provider.script(model, fail=fail)
    with pytest.raises(EXPECTED[fail]) as caught:
        await upstream.embeddings(target("gemini", model), {"input": "a"})
    assert_no_key(caught.value, caplog)
