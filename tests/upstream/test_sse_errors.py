"""An OpenAI-format error inside a 200 stream: the splitter returns the error chunk as it came, reads
nothing after it and holds the failure; chunks that only mention an error are content."""

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

CONTENT = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}],"usage":null}\n\n'
# OpenAI's own (spaced as Python's json.dumps writes it), a compatible server's bare message, vLLM's.
ERRORS = [
    b'data: {"error": {"message": "The server had an error", "type": "server_error", "param": null}}\n\n',
    b'data: {"error":"thinking_budget is not supported"}\n\n',
    b'data:{"error":{"object":"error","message":"bad","type":"BadRequestError","code":400}}\n\n',
    b'event: error\ndata: {"error": {"message": "The server had an error", "type": "server_error"}}\n\n',
]
NOT_ERRORS = [
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"error \\"error\\": {\\"error\\"}"}}]}\n\n',
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"error"}}],"usage":null}\n\n',
    b'data: {"event":"x","error":null,"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
    b'data: {"extra":{"error":{"message":"nested"}},"choices":[]}\n\n',
    b'data: {"error":null,"choices":[]}\n\n',
]


@pytest.mark.parametrize("error", ERRORS)
def test_an_error_chunk_is_returned_as_it_came_and_ends_the_stream(error: bytes) -> None:
    body = CONTENT + error + CONTENT + b"data: [DONE]\n\n"
    for at in range(len(body) + 1):
        splitter = EventSplitter()
        events = splitter.feed(body[:at]) + splitter.feed(body[at:]) + splitter.flush()
        assert [event.data for event in events] == [CONTENT, error], at
        assert splitter.failure is not None and splitter.failure.relayed and splitter.done, at


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
