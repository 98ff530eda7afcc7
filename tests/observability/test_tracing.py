"""Traces over OTLP/HTTP to a real receiver (SPEC §17): one SERVER span per request, one CLIENT span
per provider attempt under it, the client's traceparent continued and the attempt's sent on."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from switchboard.observability import tracing
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import unique_model
from tests.observability.otlp_receiver import CLIENT, ERROR, SERVER, OtlpReceiver, ReceivedSpan
from tests.routing.conftest import Caller, key, routing_config
from tests.support.databases import DatabaseFactory
from tests.support.gateway import Gateway, build_settings, start_gateway, write_config
from tests.support.sdks import openai_client
from tests.support.servers import ServerThread

PROMPT_MARKER = "prompt-text-must-never-be-traced"
BATCH_DELAY = "OTEL_BSP_SCHEDULE_DELAY"


@pytest.fixture(scope="module")
def receiver() -> Iterator[tuple[OtlpReceiver, str]]:
    app = OtlpReceiver()
    server = ServerThread(app, name="otlp-receiver").start()
    yield app, server.url
    server.stop()


@pytest.fixture(scope="module")
def traced(
    receiver: tuple[OtlpReceiver, str], databases: DatabaseFactory, fake_provider: Any, tmp_path_factory: Any
) -> Iterator[Gateway]:
    """Its own gateway, stopped after this module: tracing is per process and ends with it."""
    data_dir: Path = tmp_path_factory.mktemp("traced")
    config = write_config(data_dir, routing_config(fake_provider.base_url))
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver[1], "OTEL_SERVICE_NAME": "switchboard-test"}
    # The SDK reads its batch delay from the process environment: spans out in 0.1 s, not 5 s.
    os.environ[BATCH_DELAY] = "100"
    try:
        gateway = start_gateway(build_settings(data_dir, asyncio.run(databases.create()), config, env))
    finally:
        del os.environ[BATCH_DELAY]
    yield gateway
    gateway.stop()
    assert not tracing.ON


def _caller(gateway: Gateway, fake_provider: Any, *keys: tuple[str, str]) -> Caller:
    user = gateway.user()
    sdk = openai_client(gateway, user)
    caller = Caller(user=user, sdk=sdk, fake_provider=fake_provider)
    for provider, secret in keys:
        caller.add_key(provider, secret)
    return caller


def _traceparent() -> tuple[str, str, str]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def _complete(attempts: int) -> Any:
    def until(spans: list[ReceivedSpan]) -> bool:
        kinds = [span.kind for span in spans]
        return kinds.count(SERVER) >= 1 and kinds.count(CLIENT) >= attempts

    return until


def _sent_traceparents(fake_provider: Any, secret: str) -> list[str]:
    return [r.headers.get("traceparent", "") for r in fake_provider.received() if r.api_key == secret]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_call_is_one_server_span_with_one_client_span_carrying_its_usage(
    traced: Gateway, receiver: tuple[OtlpReceiver, str], fake_provider: Any, stream: bool
) -> None:
    secret = key()
    caller = _caller(traced, fake_provider, ("openai", secret))
    header, trace_id, client_span = _traceparent()
    raw = caller.sdk.chat.completions.with_raw_response.create(
        model="openai/gpt-4o-mini",
        messages=[{"role": "user", "content": PROMPT_MARKER}],
        stream=stream,
        extra_headers={"traceparent": header},
    )
    if stream:
        assert list(raw.parse())
    spans = receiver[0].trace(trace_id, until=_complete(1))
    (server,) = [span for span in spans if span.kind == SERVER]
    (attempt,) = [
        span for span in spans if span.kind == CLIENT and "gen_ai.operation.name" in span.attributes
    ]
    assert server.parent_span_id == client_span  # the client's trace, continued
    assert server.name == "POST /v1/chat/completions" and server.service == "switchboard-test"
    assert server.attributes["http.response.status_code"] == 200
    assert attempt.parent_span_id == server.span_id
    [record] = caller.records(raw.headers["x-request-id"])
    assert attempt.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": record["prompt_tokens"],
        "gen_ai.usage.output_tokens": record["completion_tokens"],
        "switchboard.economy.id": record["economy_id"],
        "switchboard.credential.scope": "user",
        "switchboard.attempt": 1,
        "switchboard.endpoint": "chat.completions",
    }
    assert attempt.status != ERROR
    # The provider was told of the attempt's span, in the same trace.
    assert _sent_traceparents(fake_provider, secret) == [f"00-{trace_id}-{attempt.span_id}-01"]


def test_each_attempt_of_a_fallback_is_a_client_span_and_the_failed_one_says_why(
    traced: Gateway, receiver: tuple[OtlpReceiver, str], fake_provider: Any
) -> None:
    down, good = key("down"), key()
    caller = _caller(traced, fake_provider, ("openai", down), ("anthropic", good))
    header, trace_id, _ = _traceparent()
    raw = caller.sdk.chat.completions.with_raw_response.create(
        model="openai/gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"traceparent": header},
    )
    assert raw.headers["x-switchboard-attempts"] == "2"
    spans = receiver[0].trace(trace_id, until=_complete(2))
    (server,) = [span for span in spans if span.kind == SERVER]
    first, second = sorted(
        (span for span in spans if span.kind == CLIENT),
        key=lambda span: span.attributes["switchboard.attempt"],
    )
    assert {first.parent_span_id, second.parent_span_id} == {server.span_id}
    assert first.status == ERROR and first.attributes["error.type"] == "LLM_FAILED"
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert (
        first.attributes["gen_ai.usage.input_tokens"],
        first.attributes["gen_ai.usage.output_tokens"],
    ) == (0, 0)
    assert second.status != ERROR and "error.type" not in second.attributes
    record_one, record_two = caller.records(raw.headers["x-request-id"])
    assert second.attributes["gen_ai.provider.name"] == "anthropic"
    assert second.attributes["gen_ai.usage.input_tokens"] == record_two["prompt_tokens"]
    assert second.attributes["gen_ai.usage.output_tokens"] == record_two["completion_tokens"]
    assert record_one["status"] == "error"
    assert _sent_traceparents(fake_provider, down) == [f"00-{trace_id}-{first.span_id}-01"]
    assert _sent_traceparents(fake_provider, good) == [f"00-{trace_id}-{second.span_id}-01"]


WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}
# (surface, provider kind, whether the call offers a tool, the answer's finish reasons). Chat answers
# say OpenAI's reasons whatever the kind (the adapters and litellm map theirs); a relayed Anthropic
# Messages answer says Anthropic's stop_reason, a relayed Responses answer its status.
FINISHES = [
    ("chat", "openai", False, ["stop"]),
    ("chat", "openai", True, ["tool_calls"]),
    ("chat", "anthropic", False, ["stop"]),
    ("chat", "gemini", False, ["stop"]),
    ("chat", "mistral", False, ["stop"]),
    ("messages", "anthropic", False, ["end_turn"]),
    ("messages", "anthropic", True, ["tool_use"]),
    ("messages", "openai", False, ["stop"]),
    ("responses", "openai", False, ["completed"]),
    ("responses", "gemini", False, ["stop"]),
]


def _base_url(fake_provider: FakeProvider, kind: str) -> str:
    # OpenAI-wire kinds (openai, and mistral through litellm) take /v1; the others the host root.
    return f"{fake_provider.base_url}/v1" if kind in ("openai", "mistral") else fake_provider.base_url


def _call(
    gateway: Gateway, token: str, surface: str, selector: str, tools: bool, stream: bool, traceparent: str
) -> None:
    """One call through the surface's official SDK, read to its end."""
    headers = {"traceparent": traceparent}
    if surface == "messages":
        with anthropic.Anthropic(base_url=gateway.url, api_key=token, max_retries=0, timeout=20) as sdk:
            extra: dict[str, Any] = {}
            if tools:
                extra["tools"] = [{"name": "get_weather", "input_schema": {"type": "object"}}]
            answer = sdk.messages.create(
                model=selector,
                max_tokens=50,
                messages=[{"role": "user", "content": "hi"}],
                stream=stream,
                extra_headers=headers,
                **extra,
            )
            if stream:
                assert list(answer)  # type: ignore[call-overload]
        return
    with openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=token, max_retries=0, timeout=20) as client:
        if surface == "responses":
            reply: Any = client.responses.create(
                model=selector, input="hi", stream=stream, extra_headers=headers
            )
        else:
            reply = client.chat.completions.create(
                model=selector,
                messages=[{"role": "user", "content": "hi"}],
                stream=stream,
                extra_headers=headers,
                **({"tools": [WEATHER_TOOL]} if tools else {}),  # type: ignore[arg-type]
            )
        if stream:
            assert list(reply)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(
    ("surface", "kind", "tools", "reasons"),
    FINISHES,
    ids=[f"{s}-{k}{'-tools' if t else ''}" for s, k, t, _ in FINISHES],
)
def test_the_answers_finish_reasons_are_on_its_attempts_span_and_on_the_server_span(
    traced: Gateway,
    receiver: tuple[OtlpReceiver, str],
    fake_provider: FakeProvider,
    surface: str,
    kind: str,
    tools: bool,
    reasons: list[str],
    stream: bool,
) -> None:
    user = traced.user()
    secret = key()
    Caller(user=user, sdk=None, fake_provider=fake_provider).add_key(  # type: ignore[arg-type]
        kind, secret, base_url=_base_url(fake_provider, kind)
    )
    header, trace_id, _ = _traceparent()
    _call(traced, user.token, surface, f"{kind}/{unique_model(kind)}", tools, stream, header)
    spans = receiver[0].trace(trace_id, until=_complete(1))
    (server,) = [span for span in spans if span.kind == SERVER]
    (attempt,) = [span for span in spans if span.kind == CLIENT]
    assert attempt.attributes["gen_ai.response.finish_reasons"] == reasons
    assert server.attributes["gen_ai.response.finish_reasons"] == reasons
    assert attempt.status != ERROR


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_long_tail_providers_request_carries_the_attempts_traceparent(
    traced: Gateway, receiver: tuple[OtlpReceiver, str], fake_provider: FakeProvider, stream: bool
) -> None:
    """mistral goes through litellm (upstream/translated.py), which is handed the header to send."""
    user = traced.user()
    secret = key()
    Caller(user=user, sdk=None, fake_provider=fake_provider).add_key(  # type: ignore[arg-type]
        "mistral", secret, base_url=_base_url(fake_provider, "mistral")
    )
    header, trace_id, _ = _traceparent()
    model = unique_model("mistral")
    _call(traced, user.token, "chat", f"mistral/{model}", False, stream, header)
    spans = receiver[0].trace(trace_id, until=_complete(1))
    (attempt,) = [span for span in spans if span.kind == CLIENT]
    [seen] = fake_provider.received(model)
    assert seen.path == "/v1/chat/completions" and seen.api_key == secret
    assert seen.headers.get("traceparent") == f"00-{trace_id}-{attempt.span_id}-01"


def test_a_request_without_traceparent_starts_a_trace_and_health_has_its_span(
    traced: Gateway, receiver: tuple[OtlpReceiver, str]
) -> None:
    request_id = f"health-{uuid.uuid4().hex}"
    assert traced.client().get("/health", headers={"x-request-id": request_id}).status_code == 200
    spans: list[ReceivedSpan] = []

    def found(_: list[ReceivedSpan]) -> bool:
        spans[:] = [s for s in receiver[0].spans if s.attributes.get("switchboard.request.id") == request_id]
        return bool(spans)

    receiver[0].trace("", until=found)
    (server,) = spans
    assert server.kind == SERVER and server.parent_span_id == "" and server.name == "GET"
    assert server.attributes["url.path"] == "/health"


def test_spans_carry_no_prompt_or_completion_text(receiver: tuple[OtlpReceiver, str]) -> None:
    """Run after the calls above: the marker was in a prompt, the fake's reply in every completion."""
    bodies = b"".join(receiver[0].bodies)
    assert bodies and PROMPT_MARKER.encode() not in bodies
    assert b"Hello from the fake provider" not in bodies
    assert set(receiver[0].content_types) == {"application/x-protobuf"}


def test_without_otel_settings_tracing_stays_off_and_the_sdk_is_never_imported(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from switchboard.settings import load_settings\n"
        "import switchboard.app, switchboard.llm.relay, switchboard.observability.events\n"
        f"s = load_settings({{'SWITCHBOARD_DATA_DIR': {str(tmp_path)!r}}})\n"
        "switchboard.app.create_app(s)\n"
        "assert s.otel_traces_endpoint == ''\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry.sdk')], 'sdk imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("env", "endpoint"),
    [
        ({}, ""),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, "http://collector:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom"}, "http://c:4318/custom"),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, "http://localhost:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, ""),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, ""),
    ],
)
def test_the_standard_otel_variables_decide_where_spans_go(
    env: dict[str, str], endpoint: str, tmp_path: Path
) -> None:
    from switchboard.settings import load_settings

    assert load_settings({"SWITCHBOARD_DATA_DIR": str(tmp_path), **env}).otel_traces_endpoint == endpoint
