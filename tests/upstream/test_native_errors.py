"""A provider's error event inside a relayed Anthropic Messages or OpenAI Responses stream: the events
before it come as they came, the error event itself is no event but the failure's `provider_event`
(exactly its bytes, sent by the pipeline once the call is settled), nothing after it is read, and an
error before every event is raised on the first read, with nothing to relay (SPEC §14's first byte)."""

from __future__ import annotations

import pytest

from switchboard.errors import RateLimited, SwitchboardError, UpstreamFailed
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.native import ANTHROPIC_MESSAGES, OPENAI_RESPONSES, NativeFormat
from switchboard.upstream.types import StreamEvent, UpstreamStream
from tests.fakes import anthropic_wire, responses_wire
from tests.fakes.provider import FakeProvider
from tests.fakes.script import Script
from tests.upstream.conftest import MakeTarget, unique

MESSAGES = [{"role": "user", "content": "Say hello"}]
ANTHROPIC_STARTED = anthropic_wire.stream_of(anthropic_wire.message([anthropic_wire.text("Hel")]))[:4]
OVERLOADED = anthropic_wire.error_event("overloaded_error", "Overloaded")
RATE_LIMITED = anthropic_wire.error_event(
    "rate_limit_error", "Number of requests has exceeded your rate limit"
)
RESPONSES_STARTED = list(responses_wire.response_events(Script(reply="Hel lo"), {"model": "m"}, "resp_x"))[:6]
RESPONSES_ERROR = responses_wire.error_event(6, "rate_limit_exceeded", "Rate limit reached for requests.")
RESPONSES_FAILED = responses_wire.failed_event(
    {"model": "m"}, "resp_x", 6, "server_error", "The model failed."
)


async def _read(stream: UpstreamStream) -> tuple[list[bytes], SwitchboardError | None]:
    seen: list[bytes] = []
    try:
        async for event in stream:
            seen += [event.data, *(e.data for e in stream.ready())]
    except SwitchboardError as failure:
        return seen, failure
    return seen, None


def _open(upstream: UpstreamClient, target: MakeTarget, wire: NativeFormat, model: str) -> UpstreamStream:
    if wire is ANTHROPIC_MESSAGES:
        body = {"model": model, "max_tokens": 20, "messages": MESSAGES}
        return upstream.native.stream(target("anthropic", model), wire, body)
    return upstream.native.stream(target("openai", model), wire, {"model": model, "input": "hi"})


CASES = [
    (ANTHROPIC_MESSAGES, ANTHROPIC_STARTED, OVERLOADED, UpstreamFailed),
    (ANTHROPIC_MESSAGES, ANTHROPIC_STARTED, RATE_LIMITED, RateLimited),
    (OPENAI_RESPONSES, RESPONSES_STARTED, RESPONSES_ERROR, RateLimited),
    (OPENAI_RESPONSES, RESPONSES_STARTED, RESPONSES_FAILED, UpstreamFailed),
]


@pytest.mark.parametrize("together", [False, True], ids=["own-reads", "one-read"])
@pytest.mark.parametrize(("wire", "started", "error", "kind"), CASES)
async def test_the_error_event_is_the_failures_not_an_event_and_nothing_after_it_is_read(
    wire: NativeFormat,
    started: list[bytes],
    error: bytes,
    kind: type,
    together: bool,
    upstream: UpstreamClient,
    fake_provider: FakeProvider,
    target: MakeTarget,
) -> None:
    model = unique("broken")
    after = started[-1]  # anything the provider sends after its error is not relayed
    events = [*started, error, after]
    fake_provider.script(model, answer_events=[b"".join(events)] if together else events)
    seen, failure = await _read(_open(upstream, target, wire, model))
    assert b"".join(seen) == b"".join(started)
    assert type(failure) is kind and failure is not None and failure.provider_event == error


@pytest.mark.parametrize(("wire", "error", "kind"), [(w, e, k) for w, _, e, k in CASES])
async def test_an_error_before_every_event_is_raised_by_the_first_read(
    wire: NativeFormat,
    error: bytes,
    kind: type,
    upstream: UpstreamClient,
    fake_provider: FakeProvider,
    target: MakeTarget,
) -> None:
    model = unique("broken-first")
    fake_provider.script(model, answer_events=[error])
    stream = _open(upstream, target, wire, model)
    with pytest.raises(kind) as raised:
        await anext(stream)
    assert raised.value.provider_event == error
    assert stream.ready() == []


async def test_a_ping_before_the_error_is_an_event_the_stream_began_with(
    upstream: UpstreamClient, fake_provider: FakeProvider, target: MakeTarget
) -> None:
    model = unique("ping-first")
    ping = anthropic_wire.event("ping", {"type": "ping"})
    fake_provider.script(model, answer_events=[ping, OVERLOADED])
    stream = _open(upstream, target, ANTHROPIC_MESSAGES, model)
    assert await anext(stream) == StreamEvent(ping)
    seen, failure = await _read(stream)
    assert seen == [] and isinstance(failure, UpstreamFailed) and failure.provider_event == OVERLOADED
