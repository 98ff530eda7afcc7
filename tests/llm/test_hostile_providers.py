"""A provider (or a proxy in front of it) that answers what is no answer: 502, an `error` record, no harm."""

from __future__ import annotations

import gzip
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import openai
import orjson
import pytest

from tests.conftest import GatewayFactory
from tests.llm.conftest import Caller, make_caller
from tests.support.gateway import Gateway, User
from tests.upstream.raw_server import ThreadedRawProvider

MESSAGES = [{"role": "user", "content": "hi"}]
CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _http(status: str, content_type: str, body: bytes, extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


def _sse(*events: dict[str, Any] | str) -> bytes:
    parts = [b"data: " + (e.encode() if isinstance(e, str) else orjson.dumps(e)) + b"\n\n" for e in events]
    return _http("200 OK", "text/event-stream", b"".join(parts))


BOMB = gzip.compress(b"\0" * (200 * 1024 * 1024), compresslevel=9)  # ~200 KB that inflates to 200 MiB

ANSWERS: dict[str, bytes] = {
    "html": _http("200 OK", "text/html", b"<html><body>Bad gateway (proxy)</body></html>"),
    "json-error": _http("200 OK", "application/json", orjson.dumps({"error": {"message": "quota"}})),
    "not-json": _http("200 OK", "application/json", b'{"id": "x", "choices": [tru'),
    "json-array": _http("200 OK", "application/json", b"[1, 2]"),
    "bomb": _http("200 OK", "application/json", BOMB, "content-encoding: gzip\r\n"),
    "too-big": _http("200 OK", "application/json", orjson.dumps({"id": "x", "pad": "p" * 300_000})),
    "after-done": _sse(
        {**CHUNK, "choices": [{"index": 0, "delta": {"content": "kept"}, "finish_reason": "stop"}]},
        "[DONE]",
        {**CHUNK, "choices": [{"index": 0, "delta": {"content": "SMUGGLED"}, "finish_reason": None}]},
    ),
}


def _content(text: str, finish: str | None = None) -> dict[str, Any]:
    return {**CHUNK, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


WORDS = [_content(word + " ") for word in ["one", "two", "three", "four", "five", "six"]]
ANSWERS["no-usage-json"] = _http(
    "200 OK",
    "application/json",
    orjson.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "a" * 40}}],
        }
    ),
)
ANSWERS["no-usage-stream"] = _sse(*WORDS, _content("", "stop"), "[DONE]")
# Six events, then the connection drops mid-body: content-length promises more than is sent.
_BROKEN = b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in WORDS)
ANSWERS["broken-stream"] = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    + f"content-length: {len(_BROKEN) + 500}\r\n\r\n".encode()
    + _BROKEN
)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    """A bare HTTP/1.1 server on a real socket: the request's model names the bytes it gets back."""
    server = ThreadedRawProvider(lambda head, body: ANSWERS[orjson.loads(body)["model"]])
    with server.running() as base_url:
        yield base_url


@pytest.fixture(scope="module")
def capped_gateway(make_gateway: GatewayFactory) -> Gateway:
    return make_gateway(env={"SWITCHBOARD_MAX_UPSTREAM_RESPONSE_BYTES": str(256 * 1024)})


@pytest.fixture
def hostile_caller(capped_gateway: Gateway, fake_provider: Any, upstream: str) -> Iterator[Caller]:
    made = make_caller(capped_gateway, fake_provider, providers=())
    created = made.user.client.post(
        "/llm-credentials",
        json={"provider": "openai", "secret": f"sk-{uuid.uuid4().hex}", "base_url": upstream},
    )
    assert created.status_code == 201, created.text
    yield made
    made.sdk.close()


def _records(user: User, request_id: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 5
    while True:
        found = [
            r
            for r in user.client.get("/usage/me", params={"limit": 500}).json()["data"]
            if r["request_id"] == request_id
        ]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["html", "json-error", "not-json", "json-array", "bomb", "too-big"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_200_that_is_no_answer_is_a_502_and_recorded_as_an_error(
    hostile_caller: Caller, kind: str, stream: bool
) -> None:
    before = _rss()
    response = hostile_caller.user.client.post(
        "/v1/chat/completions", json={"model": f"openai/{kind}", "messages": MESSAGES, "stream": stream}
    )
    assert response.status_code == 502, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["type"] == "api_error"
    assert len(response.content) < 4096
    (record,) = _records(hostile_caller.user, response.headers["x-request-id"])
    assert record["status"] == "error"
    assert _rss() - before < 50 * 1024 * 1024


def test_nothing_after_the_providers_first_done_reaches_the_client(hostile_caller: Caller) -> None:
    chunks = list(
        hostile_caller.sdk.chat.completions.create(model="openai/after-done", messages=MESSAGES, stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "kept"


def test_the_sdk_sees_a_hostile_answer_as_a_server_error(hostile_caller: Caller) -> None:
    with pytest.raises(openai.InternalServerError):
        hostile_caller.sdk.chat.completions.create(model="openai/html", messages=MESSAGES)


@pytest.mark.parametrize(
    ("kind", "stream", "status", "code"),
    [
        ("no-usage-json", False, "ok", "usage_estimated"),
        ("no-usage-stream", True, "ok", "usage_estimated"),
        ("broken-stream", True, "error", None),
    ],
)
def test_content_that_reached_the_client_is_never_recorded_as_zero_tokens(
    hostile_caller: Caller, kind: str, stream: bool, status: str, code: str | None
) -> None:
    response = hostile_caller.user.client.post(
        "/v1/chat/completions",
        json={
            "model": f"openai/{kind}",
            "messages": [{"role": "user", "content": "x" * 40}],
            "stream": stream,
        },
    )
    assert response.status_code == 200
    if stream:
        assert b"one" in response.content
    (record,) = _records(hostile_caller.user, response.headers["x-request-id"])
    assert record["status"] == status
    assert record["prompt_tokens"] == 11  # "user" and 40 characters, at four a token
    assert record["completion_tokens"] >= 1
    assert record["usage_estimated"] is True
    if code is not None:
        assert record["error_code"] == code
    else:
        assert record["error_code"] not in (None, "usage_estimated")  # it names the failure


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
