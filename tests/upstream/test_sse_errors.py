"""An OpenAI-format error inside a 200 stream: the splitter holds the error chunk, exactly as it came,
on the failure (not among the events, so that the pipeline sends it once the call is settled, or moves
on to the next route when nothing came before it), and reads nothing after it; chunks that only
mention an error are content. OpenRouter's error chunk is an ordinary chunk with a top-level `error`
and `"finish_reason":"error"`, caught on the splitter's fast path too."""

from __future__ import annotations

import orjson
import pytest

from switchboard.errors import (
    NotFound,
    RateLimited,
    UpstreamBadRequest,
    UpstreamCredentialRejected,
    UpstreamFailed,
)
from switchboard.upstream.provider_errors import in_stream
from switchboard.upstream.sse import EventSplitter
from switchboard.upstream.types import StreamEvent, Usage

CONTENT = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}],"usage":null}\n\n'
# OpenAI's own (spaced as Python's json.dumps writes it), a compatible server's bare message, vLLM's.
ERRORS = [
    b'data: {"error": {"message": "The server had an error", "type": "server_error", "param": null}}\n\n',
    b'data: {"error":"thinking_budget is not supported"}\n\n',
    b'data:{"error":{"object":"error","message":"bad","type":"BadRequestError","code":400}}\n\n',
    b'event: error\ndata: {"error": {"message": "The server had an error", "type": "server_error"}}\n\n',
    # OpenRouter's (its documented mid-stream error), and the same with OpenAI's trailing `"usage":null`.
    b'data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o",'
    b'"provider":"OpenAI","error":{"code":502,"message":"Provider disconnected unexpectedly"},'
    b'"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n',
    b'data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o",'
    b'"error":{"code":429,"message":"Rate limit exceeded"},'
    b'"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}],"usage":null}\n\n',
]
NOT_ERRORS = [
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"error \\"error\\": {\\"error\\"}"}}]}\n\n',
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"error"}}],"usage":null}\n\n',
    b'data: {"event":"x","error":null,"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
    b'data: {"extra":{"error":{"message":"nested"}},"choices":[]}\n\n',
    b'data: {"error":null,"choices":[]}\n\n',
    # Finish chunks (a string where a content chunk has null) are looked at, and are content.
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n',
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"error"}],"usage":null}\n\n',
]


@pytest.mark.parametrize("error", ERRORS)
def test_an_error_chunk_ends_the_stream_as_the_failure_that_carries_it(error: bytes) -> None:
    body = CONTENT + error + CONTENT + b"data: [DONE]\n\n"
    for at in range(len(body) + 1):
        splitter = EventSplitter()
        events = splitter.feed(body[:at]) + splitter.feed(body[at:]) + splitter.flush()
        assert [event.data for event in events] == [CONTENT], at
        assert splitter.failure is not None and splitter.done, at
        assert splitter.failure.provider_event == error, at


@pytest.mark.parametrize("error", ERRORS)
def test_an_error_chunk_as_the_first_event_leaves_no_event(error: bytes) -> None:
    splitter = EventSplitter()
    events = splitter.feed(b": OPENROUTER PROCESSING\n\n" + error + CONTENT) + splitter.flush()
    assert events == [] and splitter.failure is not None
    assert splitter.failure.provider_event == error


def test_openrouters_error_chunk_maps_its_code_as_a_status() -> None:
    limited, down = ERRORS[-1], ERRORS[-2]
    for chunk, kind in ((limited, RateLimited), (down, UpstreamFailed)):
        splitter = EventSplitter()
        splitter.feed(CONTENT + chunk)
        assert type(splitter.failure) is kind


@pytest.mark.parametrize("chunk", NOT_ERRORS)
def test_a_chunk_that_only_mentions_an_error_is_content(chunk: bytes) -> None:
    splitter = EventSplitter()
    events = splitter.feed(chunk + CONTENT) + splitter.flush()
    assert [event.data for event in events] == [chunk, CONTENT]
    assert splitter.failure is None and not splitter.done


@pytest.mark.parametrize(
    ("error", "kind", "status"),
    [
        ({"message": "overloaded", "type": "server_error", "param": None, "code": None}, UpstreamFailed, 502),
        ({"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}, RateLimited, 429),
        ({"message": "too long", "type": "invalid_request_error", "code": None}, UpstreamBadRequest, 400),
        ({"message": "bad", "code": 400}, UpstreamBadRequest, 400),
        ({"message": "gone", "code": 404}, NotFound, 404),
        (
            {"message": "Incorrect API key provided", "code": "invalid_api_key"},
            UpstreamCredentialRejected,
            424,
        ),
        ("a bare message", UpstreamFailed, 502),
        (None, UpstreamFailed, 502),
    ],
)
def test_in_stream_errors_map_as_the_same_error_outside_a_stream(
    error: object, kind: type, status: int
) -> None:
    failure = in_stream(error)
    assert type(failure) is kind and failure.status == status
    if isinstance(error, dict):
        assert error["message"] in failure.message
    assert orjson.dumps(failure.message)  # a plain string, whatever came


def test_the_usage_an_error_chunk_carries_is_the_providers_count() -> None:
    error = (
        b'data: {"id":"gen-1","error":{"code":502,"message":"Provider disconnected"},'
        b'"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}],'
        b'"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}\n\n'
    )
    splitter = EventSplitter()
    assert splitter.feed(CONTENT + error) == [StreamEvent(CONTENT)]
    assert splitter.failure is not None and splitter.failure.provider_event == error
    assert splitter.usage == Usage(prompt_tokens=12, completion_tokens=3)
