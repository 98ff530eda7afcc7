"""`switchboard_streams_in_flight` (SPEC §17) counts exactly the streams being relayed, whatever way
every earlier call ended: each ending is followed by a check that the gauge is back to 0, and the
mix by a stream held open that must read 1."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from switchboard.auth.tokens import TokenCodec
from tests.conftest import GatewayFactory, default_test_config
from tests.llm.conftest import add_credential, provider_base, unique_model
from tests.observability.samples import parse
from tests.support import gateway as support
from tests.support.databases import DatabaseFactory
from tests.support.gateway import TokenFactory, User
from tests.support.recorder import RECORDER, recording_client, tls_context
from tests.support.served import gateway_process, gateway_processes, served_env

METRICS_TOKEN = RECORDER.remember_secret(f"metrics-{uuid.uuid4().hex}")
GAUGE = "switchboard_streams_in_flight"
PROVIDERS = ("openai", "anthropic", "gemini")
HI = [{"role": "user", "content": "hi"}]
# Provider events before the client has content: Anthropic opens with message_start and
# content_block_start, which translate to nothing the client sees.
EVENTS_BEFORE_CONTENT = {"openai": 1, "anthropic": 3, "gemini": 1}


@dataclass
class Served:
    """A real `switchboard serve` (uvloop, the httptools protocol), as the tests below use a gateway."""

    url: str
    tokens: TokenFactory
    clients: list[httpx.Client] = field(default_factory=list)

    def user(self, role: str = "User") -> User:
        sub = uuid.uuid4()
        token = self.tokens.mint(sub=sub, role=role)
        client = recording_client(self.url, token)
        self.clients.append(client)
        return User(id=sub, role=role, token=token, client=client)


@pytest.fixture(
    scope="module",
    # Each its own xdist group, so that both workers share the file's gateways.
    params=[
        pytest.param("in-process", marks=pytest.mark.xdist_group("streams-gauge-in-process")),
        pytest.param("switchboard serve", marks=pytest.mark.xdist_group("streams-gauge-served")),
    ],
)
def gauged(
    request: pytest.FixtureRequest,
    make_gateway: GatewayFactory,
    databases: DatabaseFactory,
    fake_provider: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    """A gateway of its own (no other test's streams move its gauge): in this process on h11, or
    the server `switchboard serve` runs, whose protocol sees a client leave differently."""
    if request.param == "in-process":
        yield make_gateway(env={"SWITCHBOARD_METRICS_TOKEN": METRICS_TOKEN})
        return
    directory = tmp_path_factory.mktemp("served")
    env = served_env(
        databases,
        directory,
        default_test_config(fake_provider.base_url),
        SWITCHBOARD_METRICS_TOKEN=METRICS_TOKEN,
    )
    with gateway_process(env, directory / "serve.log") as (_, url):
        served = Served(url, TokenFactory(TokenCodec(support.TEST_JWT_SECRET, support.TEST_AUDIENCE)))
        yield served
        for client in served.clients:
            client.close()


@pytest.fixture
def user(gauged: Any, fake_provider: Any) -> User:
    made = gauged.user()
    for provider in PROVIDERS:
        add_credential(made, provider, provider_base(fake_provider, provider))
    return made


def gauge(gateway: Any) -> float:
    response = httpx.get(
        f"{gateway.url}/metrics",
        headers={"authorization": f"Bearer {METRICS_TOKEN}"},
        verify=tls_context(),
    )
    assert response.status_code == 200, response.text
    return parse(response.text).value(GAUGE)


def settles_at(gateway: Any, expected: float, after: str) -> None:
    """The gauge reads `expected` within 10 s (a stream's side unwinds after its client moves on)."""
    deadline = time.monotonic() + 10
    while (seen := gauge(gateway)) != expected:
        assert time.monotonic() < deadline, f"after {after}: {GAUGE} reads {seen}, not {expected}"
        time.sleep(0.05)


def _client(gateway: Any, user: User, timeout: float = 20) -> httpx.Client:
    return httpx.Client(
        base_url=gateway.url,
        headers={"authorization": f"Bearer {user.token}"},
        timeout=timeout,
        verify=tls_context(),
    )


def _chat(provider: str, model: str, stream: bool = True) -> dict[str, Any]:
    return {"model": f"{provider}/{model}", "messages": HI, "stream": stream}


@contextmanager
def open_stream(gateway: Any, user: User, fake_provider: Any, provider: str) -> Iterator[None]:
    """A stream whose first events have reached the client, held open (the provider stalls)."""
    model = unique_model("held")
    fake_provider.script(model, stall_after=EVENTS_BEFORE_CONTENT[provider] + 1)
    with (
        _client(gateway, user) as client,
        client.stream("POST", "/v1/chat/completions", json=_chat(provider, model)) as response,
    ):
        assert response.status_code == 200
        chunks = response.iter_bytes()  # kept: a dropped iterator would close the response
        assert next(chunks)
        yield


Ending = Callable[[Any, User, Any, str], None]


def ok_stream(gateway: Any, user: User, fake: Any, provider: str) -> None:
    with _client(gateway, user) as client:
        response = client.post("/v1/chat/completions", json=_chat(provider, unique_model("ok")))
        assert response.status_code == 200 and "[DONE]" in response.text


def ok_json(gateway: Any, user: User, fake: Any, provider: str) -> None:
    with _client(gateway, user) as client:
        response = client.post("/v1/chat/completions", json=_chat(provider, unique_model("ok"), False))
        assert response.status_code == 200


def fails_before_first_byte(gateway: Any, user: User, fake: Any, provider: str) -> None:
    model = unique_model("fail")
    fake.script(model, fail="server_error")
    with _client(gateway, user) as client:
        assert client.post("/v1/chat/completions", json=_chat(provider, model)).status_code == 502


def provider_rate_limited(gateway: Any, user: User, fake: Any, provider: str) -> None:
    model = unique_model("limited")
    fake.script(model, fail="rate_limit")
    with _client(gateway, user) as client:
        assert client.post("/v1/chat/completions", json=_chat(provider, model)).status_code == 429


def breaks_mid_stream(gateway: Any, user: User, fake: Any, provider: str) -> None:
    model = unique_model("broken")
    fake.script(model, reply="one two three four five", break_after=EVENTS_BEFORE_CONTENT[provider] + 1)
    with _client(gateway, user) as client:
        response = client.post("/v1/chat/completions", json=_chat(provider, model))
        assert response.status_code == 200 and "[DONE]" not in response.text


def client_leaves_mid_stream(gateway: Any, user: User, fake: Any, provider: str) -> None:
    with open_stream(gateway, user, fake, provider):
        pass


def client_leaves_before_first_byte(gateway: Any, user: User, fake: Any, provider: str) -> None:
    model = unique_model("slow")
    fake.script(model, first_byte_delay=30)
    host, port = gateway.url.removeprefix("http://").split(":")
    payload = httpx.Request("POST", "http://x/", json=_chat(provider, model)).read()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {user.token}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
    )
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(head.encode() + payload)
        deadline = time.monotonic() + 30  # under load: thirty calls may be under way
        while not fake.received(model):
            assert time.monotonic() < deadline, "the provider never got the call"
            time.sleep(0.02)
    assert fake.wait_disconnect_sync(model, timeout=10) is not None


def refused_by_a_limit(gateway: Any, user: User, fake: Any, provider: str) -> None:
    admin = gateway.user(role="Admin")
    limited = gateway.user()
    add_credential(limited, provider, provider_base(fake, provider))
    limit = {"subject_type": "user", "subject_id": str(limited.id), "metric": "requests", "window": "hour"}
    assert admin.client.post("/limits", json={**limit, "amount": "1"}).status_code == 201
    with _client(gateway, limited) as client:
        assert client.post("/v1/chat/completions", json=_chat(provider, unique_model("a"))).status_code == 200
        deadline = time.monotonic() + 10
        while True:
            status = client.post("/v1/chat/completions", json=_chat(provider, unique_model("b")))
            if status.status_code == 429:
                break
            assert time.monotonic() < deadline, status.text  # a new limit applies within 3 s
            time.sleep(0.05)


def ok_messages_stream(gateway: Any, user: User, fake: Any, provider: str) -> None:
    body = {"model": f"{provider}/{unique_model('ok')}", "max_tokens": 20, "messages": HI, "stream": True}
    with _client(gateway, user) as client:
        response = client.post("/v1/messages", json=body)
        assert response.status_code == 200 and "message_stop" in response.text


def ok_responses_stream(gateway: Any, user: User, fake: Any, provider: str) -> None:
    body = {"model": f"{provider}/{unique_model('ok')}", "input": "hi", "stream": True}
    with _client(gateway, user) as client:
        response = client.post("/v1/responses", json=body)
        assert response.status_code == 200 and "response.completed" in response.text


def client_leaves_a_messages_stream(gateway: Any, user: User, fake: Any, provider: str) -> None:
    model = unique_model("held")
    fake.script(model, stall_after=EVENTS_BEFORE_CONTENT[provider] + 1)
    body = {"model": f"{provider}/{model}", "max_tokens": 20, "messages": HI, "stream": True}
    with (
        _client(gateway, user) as client,
        client.stream("POST", "/v1/messages", json=body) as response,
    ):
        assert response.status_code == 200
        assert next(response.iter_bytes())


ENDINGS: dict[str, Ending] = {
    "ok messages stream": ok_messages_stream,
    "ok responses stream": ok_responses_stream,
    "client left a messages stream": client_leaves_a_messages_stream,
    "ok stream": ok_stream,
    "ok json": ok_json,
    "provider 5xx before the first byte": fails_before_first_byte,
    "provider 429 before the first byte": provider_rate_limited,
    "broken mid-stream": breaks_mid_stream,
    "client left mid-stream": client_leaves_mid_stream,
    "client left before the first byte": client_leaves_before_first_byte,
    "refused by a limit": refused_by_a_limit,
}


def test_after_every_ending_in_turn_the_gauge_is_0_and_an_open_stream_reads_1(
    gauged: Any, user: User, fake_provider: Any
) -> None:
    settles_at(gauged, 0, "the start")
    for provider in PROVIDERS:
        for name in sorted(ENDINGS):
            ENDINGS[name](gauged, user, fake_provider, provider)
            settles_at(gauged, 0, f"{name} ({provider})")
    for provider in PROVIDERS:
        with open_stream(gauged, user, fake_provider, provider):
            assert gauge(gauged) == 1, f"a {provider} stream open after every ending is not counted"
        settles_at(gauged, 0, "the held stream's end")


def test_after_every_ending_at_once_an_open_stream_reads_1(
    gauged: Any, user: User, fake_provider: Any
) -> None:
    calls = [(name, provider) for provider in PROVIDERS for name in sorted(ENDINGS)]
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        done = [pool.submit(ENDINGS[name], gauged, user, fake_provider, p) for name, p in calls]
        for future in done:
            future.result()
    settles_at(gauged, 0, "every ending at once")
    for provider in PROVIDERS:
        with open_stream(gauged, user, fake_provider, provider):
            assert gauge(gauged) == 1
        settles_at(gauged, 0, "the held stream's end")


def test_a_multiproc_dir_set_by_the_operator_holding_an_earlier_servers_files_does_not_move_the_gauge(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Any
) -> None:
    """A restarted container keeps PROMETHEUS_MULTIPROC_DIR (the operator set it, following
    prometheus_client's docs) and the files of the server that was killed there with a stream open;
    the new server's gauge counts its own streams only."""
    kept = tmp_path / "prometheus"
    kept.mkdir()
    env = served_env(
        databases,
        tmp_path,
        default_test_config(fake_provider.base_url),
        SWITCHBOARD_METRICS_TOKEN=METRICS_TOKEN,
        PROMETHEUS_MULTIPROC_DIR=str(kept),
    )
    tokens = TokenFactory(TokenCodec(support.TEST_JWT_SECRET, support.TEST_AUDIENCE))
    for workers in ("1", "2"):
        with gateway_process(env, tmp_path / "first.log", "--workers", workers) as (first, url):
            served = Served(url, tokens)
            user = served.user()
            add_credential(user, "openai", provider_base(fake_provider, "openai"))
            with open_stream(served, user, fake_provider, "openai"):
                settles_at(served, 1, "a stream opened")
                # Killed with the stream open, every process of it, as a node loss does.
                os.killpg(first.pid, signal.SIGKILL)
                first.wait(30)
        with gateway_process(env, tmp_path / "second.log", "--workers", workers) as (_, url):
            served = Served(url, tokens)
            user = served.user()
            add_credential(user, "openai", provider_base(fake_provider, "openai"))
            settles_at(served, 0, f"a restart in the same directory ({workers} worker(s))")
            with open_stream(served, user, fake_provider, "openai"):
                assert gauge(served) == 1
            settles_at(served, 0, "the stream's end")
            for client in served.clients:
                client.close()


# `switchboard serve` as pid 1 of a PID namespace of its own, as in a container; unshare does not pass
# SIGTERM on, so the fixture's kill with --kill-child takes the server with it.
PID_ONE = ("unshare", "--pid", "--fork", "--kill-child")


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="PID namespaces need root and unshare"
)
def test_two_containers_sharing_an_operator_set_multiproc_dir_do_not_zero_each_others_open_streams(
    databases: DatabaseFactory, fake_provider: Any, tmp_path: Any
) -> None:
    """Two servers, each pid 1 of its own namespace (two containers) on one volume named in
    PROMETHEUS_MULTIPROC_DIR: with that directory both wrote `gauge_livesum_1.db`, the last writer
    winning, so a stream ending on one read 0 on the other while its own stream was open (issue 31
    item 6's report: 0 with a stream open, after a mix of calls)."""
    kept = tmp_path / "prometheus"
    kept.mkdir()
    env = served_env(  # one database for both, as two containers of one deployment share theirs
        databases,
        tmp_path,
        default_test_config(fake_provider.base_url),
        SWITCHBOARD_METRICS_TOKEN=METRICS_TOKEN,
        PROMETHEUS_MULTIPROC_DIR=str(kept),
    )
    tokens = TokenFactory(TokenCodec(support.TEST_JWT_SECRET, support.TEST_AUDIENCE))
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with gateway_processes(env, logs, wrapper=PID_ONE) as [(_, url_a), (_, url_b)]:
        a, b = Served(url_a, tokens), Served(url_b, tokens)
        user_a, user_b = a.user(), b.user()
        add_credential(user_a, "openai", provider_base(fake_provider, "openai"))
        add_credential(user_b, "openai", provider_base(fake_provider, "openai"))
        with open_stream(a, user_a, fake_provider, "openai"):
            settles_at(a, 1, "a stream opened on the first server")
            ok_stream(b, user_b, fake_provider, "openai")
            ok_json(b, user_b, fake_provider, "openai")
            assert gauge(a) == 1, "the second server's calls moved the first's open stream"
            assert gauge(b) == 0
        for client in a.clients + b.clients:
            client.close()
