"""A stream that ends with an error event is settled before that event goes out (SPEC §8), as one that
ends with [DONE] is: a client that reads `/usage/me` the moment the error arrived (no polling) finds
the call's record. For the provider's own error event relayed as it came (OpenAI's chunk on chat
completions, Anthropic's `event: error` on /v1/messages, a Responses `error` event on /v1/responses)
and for the gateway's own (an adapter's failure).

How it is shown without timing margins: the fake provider keeps its connection open after its error
event, so the gateway closing it says the gateway has read the error and is settling; a transaction
holding the usage table meanwhile keeps that settlement from committing. While it holds, the error
must not have reached the client (the check waits a moment for bytes that must not come, so only a
broken gateway is caught by a margin, never a correct one); once it is let go, the client reads its
record as soon as the error arrives."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes import anthropic_wire, gemini_wire, openai_wire, responses_wire
from tests.fakes.provider import FakeProvider
from tests.fakes.script import Script
from tests.llm.conftest import credentialed_user, unique_model
from tests.metering.conftest import usage_table_locked
from tests.support.gateway import Gateway, User

HI = [{"role": "user", "content": "hi"}]
MUST_NOT_ARRIVE_S = 0.5  # how long the client looks for an error event that must not come yet
OVERLOADED = "The server had an error while processing your request."


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Gateway:
    return make_gateway(default_test_config(fake_provider.base_url))


@pytest.fixture(scope="module")
def user(gateway: Gateway, fake_provider: FakeProvider) -> User:
    return credentialed_user(gateway, fake_provider, ("openai", "anthropic", "gemini"))


@dataclass
class Case:
    path: str
    provider: str
    body: dict[str, Any]
    started: list[bytes]  # the provider's events before its error
    error: bytes  # the provider's error event
    told: bytes  # what tells the client the stream failed (the provider's event when relayed)


def _chat_started(model: str) -> list[bytes]:
    body = {"model": model, "stream_options": {"include_usage": True}}
    return list(openai_wire.chat_events(Script(reply="Hel lo"), body, "chatcmpl-held"))[:-3]


def _case(name: str, model: str) -> Case:
    if name == "chat-relayed":
        error = openai_wire.stream_error(OVERLOADED)
        body = {"messages": HI}
        return Case("/v1/chat/completions", "openai", body, _chat_started(model), error, error)
    if name == "chat-adapted":  # Gemini's error through the gateway's adapter: the gateway's event
        started = gemini_wire.sse(gemini_wire.response([gemini_wire.text_part("Hel")], finish=None))
        error = gemini_wire.sse({"error": {"code": 500, "message": OVERLOADED, "status": "INTERNAL"}})
        return Case("/v1/chat/completions", "gemini", {"messages": HI}, [started], error, b'data: {"error":')
    if name == "messages-relayed":
        started = anthropic_wire.stream_of(anthropic_wire.message([anthropic_wire.text("Hel")]))[:4]
        error = anthropic_wire.error_event("overloaded_error", "Overloaded")
        return Case("/v1/messages", "anthropic", {"max_tokens": 20, "messages": HI}, started, error, error)
    events = responses_wire.response_events(Script(reply="Hel lo"), {"model": model}, "resp_held")
    error = responses_wire.error_event(6, "server_error", OVERLOADED)
    return Case("/v1/responses", "openai", {"input": "hi"}, list(events)[:6], error, error)


@contextmanager
def usage_writes_held(gateway: Gateway) -> Iterator[None]:
    """Inserts into usage_records wait (another transaction holds the table) until the block ends."""
    held: dict[str, Any] = {}

    async def hold() -> None:
        locked, held["release"] = asyncio.Event(), asyncio.Event()

        async def keep() -> None:
            async with usage_table_locked(gateway.app):
                locked.set()
                await held["release"].wait()

        held["task"] = asyncio.create_task(keep())
        await locked.wait()

    async def let_go() -> None:
        held["release"].set()
        await held["task"]

    gateway.server.call_soon(hold())
    try:
        yield
    finally:
        gateway.server.call_soon(let_go())


@dataclass
class Client:
    """Reads the stream in a thread; the moment the failure arrives it reads its usage records."""

    gateway: Gateway
    user: User
    case: Case
    model: str
    told: threading.Event = field(default_factory=threading.Event)
    received: bytearray = field(default_factory=bytearray)
    records: list[dict[str, Any]] = field(default_factory=list)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        body = {**self.case.body, "model": f"{self.case.provider}/{self.model}", "stream": True}
        headers = {"authorization": f"Bearer {self.user.token}"}
        with (
            httpx.Client(base_url=self.gateway.url, headers=headers, timeout=30) as http,
            http.stream("POST", self.case.path, json=body) as response,
        ):
            for piece in response.iter_raw():
                self.received += piece
                if self.case.told in self.received and not self.told.is_set():
                    # Before the rest of the response: no polling, no waiting for the end.
                    found = self.user.client.get("/usage/me", params={"limit": 500}).json()["data"]
                    self.records = [r for r in found if r["model"] == self.model]
                    self.told.set()


@pytest.mark.parametrize("name", ["chat-relayed", "chat-adapted", "messages-relayed", "responses-relayed"])
def test_the_record_is_committed_before_the_error_event_reaches_the_client(
    name: str, gateway: Gateway, user: User, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"held-{name}")
    case = _case(name, model)
    events = [*case.started, case.error]
    fake_provider.script(model, answer_events=events, stall_after=len(events))  # then holds on
    client = Client(gateway, user, case, model)
    with usage_writes_held(gateway):
        client.start()
        # The gateway has read the error and let the provider go: it is settling the call.
        assert fake_provider.wait_disconnect_sync(model, timeout=10) is not None
        assert not client.told.wait(MUST_NOT_ARRIVE_S), "the error went out before the call was settled"
    assert client.told.wait(10)
    assert client.thread is not None
    client.thread.join(10)
    received = bytes(client.received)
    if case.told == case.error:  # relayed: the provider's event as it came, once, and last
        assert received.endswith(case.error) and received.count(case.error) == 1
    else:  # the gateway's own error chunk, last
        assert received.split(b"\n\n")[-2].startswith(case.told)
    [record] = client.records
    assert (record["status"], record["stream"]) == ("error", True)
