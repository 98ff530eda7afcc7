"""GET /metrics (SPEC §17): who may read it, its format, and known calls moving it by exact amounts."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import openai
import pytest

from switchboard.observability.metrics import MAX_MODELS
from tests.auth.conftest import issue_key
from tests.conftest import GatewayFactory
from tests.observability.samples import Samples, parse
from tests.routing.conftest import Caller, key, routing_config
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER, tls_context
from tests.support.sdks import openai_client

METRICS_TOKEN = RECORDER.remember_secret(f"metrics-{uuid.uuid4().hex}")
DEFAULT_ECONOMY = str(uuid.uuid5(uuid.NAMESPACE_URL, "switchboard:economy:default"))
MINI = {"gen_ai_provider_name": "openai", "gen_ai_request_model": "gpt-4o-mini"}
CHAT = {**MINI, "gen_ai_operation_name": "chat"}
COST = 11 * 150 + 7 * 600  # the fake provider's 11 prompt and 7 completion tokens at the test prices
DURATION = "gen_ai_server_request_duration_seconds"
TTFT = "gen_ai_server_time_to_first_token_seconds"
TOKENS = "gen_ai_client_token_usage"


@pytest.fixture(scope="module")
def metered(make_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    """A gateway of its own: no other test's calls move its metrics."""
    return make_gateway(
        config=routing_config(fake_provider.base_url), env={"SWITCHBOARD_METRICS_TOKEN": METRICS_TOKEN}
    )


@pytest.fixture
def caller(metered: Gateway, fake_provider: Any) -> Caller:
    user = metered.user()
    sdk = openai_client(metered, user)
    made = Caller(user=user, sdk=sdk, fake_provider=fake_provider)
    made.add_key("openai", key())
    return made


def scrape(gateway: Gateway) -> Samples:
    headers = {"authorization": f"Bearer {METRICS_TOKEN}"}
    response = httpx.get(f"{gateway.url}/metrics", headers=headers, verify=tls_context())
    assert response.status_code == 200, response.text
    return parse(response.text)


def _status(gateway: Gateway, token: str | None) -> int:
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.get(f"{gateway.url}/metrics", headers=headers, verify=tls_context()).status_code


@pytest.mark.parametrize(
    ("role", "permissions", "status"),
    [
        ("Admin", None, 200),
        ("SuperAdmin", None, 200),
        ("User", ["ReadMetrics"], 200),
        ("User", None, 403),
        ("Viewer", None, 403),
        ("Manager", None, 403),
        ("Operator", None, 403),
        ("ApiClient", None, 403),
    ],
)
def test_metrics_are_for_admins_and_the_readmetrics_permission(
    metered: Gateway, role: str, permissions: list[str] | None, status: int
) -> None:
    claims = {"permissions": permissions} if permissions is not None else {}
    assert _status(metered, metered.tokens.mint(role=role, **claims)) == status


def test_anonymous_is_401_with_a_bearer_challenge(metered: Gateway) -> None:
    response = httpx.get(f"{metered.url}/metrics")
    assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")


def test_an_admins_api_key_reads_metrics_and_a_users_does_not(metered: Gateway) -> None:
    assert _status(metered, issue_key(metered, metered.user("Admin").token)["api_key"]) == 200
    assert _status(metered, issue_key(metered, metered.user("User").token)["api_key"]) == 403


def test_the_metrics_token_is_good_for_metrics_only(metered: Gateway) -> None:
    assert _status(metered, METRICS_TOKEN) == 200
    assert _status(metered, METRICS_TOKEN + "x") == 401
    headers = {"authorization": f"Bearer {METRICS_TOKEN}"}
    for path in ("/v1/models", "/usage/me", "/economies"):
        assert httpx.get(f"{metered.url}{path}", headers=headers).status_code == 401, path


def test_an_unset_metrics_token_never_matches(gateway: Gateway) -> None:
    assert gateway.settings.metrics_token is None
    for bearer in ("null", "None", "undefined", '""'):
        assert _status(gateway, bearer) == 401


def test_the_answer_is_prometheus_text_0_0_4(metered: Gateway, caller: Caller) -> None:
    caller.chat()
    response = httpx.get(f"{metered.url}/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = response.text
    for family in ("switchboard_requests", "switchboard_cost", "switchboard_limit_rejections"):
        assert f"# TYPE {family}_total counter\n" in text
    for family in (DURATION, TTFT, TOKENS, "switchboard_usage_writer_commit_seconds"):
        assert f"# TYPE {family} histogram\n" in text
    for family in ("switchboard_streams_in_flight", "switchboard_usage_writer_queue_depth"):
        assert f"# TYPE {family} gauge\n" in text
    assert "_created" not in text


def test_known_calls_move_the_genai_and_gateway_families_by_exactly_their_amounts(
    metered: Gateway, caller: Caller
) -> None:
    before = scrape(metered)
    caller.chat()
    assert "".join(c.choices[0].delta.content or "" for c in caller.chat(stream=True).parse() if c.choices)
    embedded = caller.sdk.embeddings.create(model="openai/text-embedding-3-small", input="hello")
    moved = scrape(metered).minus(before)

    assert moved.value(f"{DURATION}_count", **CHAT, error_type="") == 2
    assert moved.value(f"{TTFT}_count", **CHAT) == 1  # the stream's; a JSON answer has no first token
    assert moved.value(f"{TOKENS}_count", **CHAT, gen_ai_token_type="input") == 2
    assert moved.value(f"{TOKENS}_sum", **CHAT, gen_ai_token_type="input") == 22
    assert moved.value(f"{TOKENS}_count", **CHAT, gen_ai_token_type="output") == 2
    assert moved.value(f"{TOKENS}_sum", **CHAT, gen_ai_token_type="output") == 14
    embeddings = {
        "gen_ai_provider_name": "openai",
        "gen_ai_request_model": "text-embedding-3-small",
        "gen_ai_operation_name": "embeddings",
    }
    prompt = embedded.usage.prompt_tokens
    assert moved.value(f"{DURATION}_count", **embeddings, error_type="") == 1
    assert moved.value(f"{TOKENS}_sum", **embeddings, gen_ai_token_type="input") == prompt
    assert moved.value(f"{TOKENS}_count", **embeddings, gen_ai_token_type="output") == 0
    assert moved.value("switchboard_requests_total", endpoint="chat.completions", status="200") == 2
    assert moved.value("switchboard_requests_total", endpoint="embeddings", status="200") == 1
    # 0.02 per million tokens is 20 nano-units a token.
    assert moved.value("switchboard_cost_total", economy=DEFAULT_ECONOMY) == 2 * COST + 20 * prompt
    assert moved.total(f"{DURATION}_count") == 3  # one observation per call, nothing else
    assert moved.total("switchboard_upstream_errors_total") == 0
    assert moved.total("switchboard_fallbacks_total") == 0


def test_the_token_classes_move_by_exactly_the_records_counts(
    metered: Gateway, caller: Caller, fake_provider: Any
) -> None:
    """SPEC §20: cache reads, cache writes and reasoning are summed per economy beside the cost."""
    before = scrape(metered)
    fake_provider.enqueue(
        "gpt-4o-mini", prompt_tokens=40, cached_tokens=24, completion_tokens=9, reasoning_tokens=5
    )
    caller.chat()
    caller.chat()  # the fake's usual 11 and 7: no class apart
    moved = scrape(metered).minus(before)
    assert moved.value("switchboard_tokens_total", economy=DEFAULT_ECONOMY, **{"class": "cached"}) == 24
    assert moved.value("switchboard_tokens_total", economy=DEFAULT_ECONOMY, **{"class": "reasoning"}) == 5
    assert moved.total("switchboard_tokens_total") == 29
    # 16 uncached and 24 cached tokens at the input price (the catalog states no cache price), 9 out.
    assert moved.value("switchboard_cost_total", economy=DEFAULT_ECONOMY) == COST + 40 * 150 + 9 * 600


def test_a_failed_call_is_observed_once_with_its_error_type(metered: Gateway, caller: Caller) -> None:
    model = f"broken-{uuid.uuid4().hex[:8]}"
    assert caller.post({"model": f"openai/{model}"}).status_code == 200  # answered once: labelled
    caller.fake_provider.script(model, fail="server_error")
    labels = {
        "gen_ai_provider_name": "openai",
        "gen_ai_request_model": model,
        "gen_ai_operation_name": "chat",
    }
    before = scrape(metered)
    response = caller.post({"model": f"openai/{model}"})
    moved = scrape(metered).minus(before)
    assert response.status_code == 502
    assert moved.total(f"{DURATION}_count", **labels) == 1
    assert moved.value(f"{DURATION}_count", **labels, error_type="") == 0
    assert moved.value(f"{DURATION}_count", **labels, error_type="LLM_FAILED") == 1
    assert moved.total(f"{TOKENS}_count", **labels) == 0 and moved.total(f"{TTFT}_count") == 0
    assert moved.value("switchboard_upstream_errors_total", provider="openai", kind="LLM_FAILED") == 1
    assert moved.value("switchboard_requests_total", endpoint="chat.completions", status="502") == 1
    assert moved.total("switchboard_cost_total") == 0


def test_only_listed_or_answered_models_earn_a_label_so_made_up_names_fill_no_cap(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    gateway = make_gateway(
        config=routing_config(fake_provider.base_url), env={"SWITCHBOARD_METRICS_TOKEN": METRICS_TOKEN}
    )
    user = gateway.user()
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0)
    made = Caller(user=user, sdk=sdk, fake_provider=fake_provider)
    made.add_key("openai", key())
    bogus = [f"bogus-{uuid.uuid4().hex[:10]}" for _ in range(MAX_MODELS + 5)]
    for name in bogus:  # the provider does not know them
        fake_provider.script(name, fail="bad_request", status=404, message="The model does not exist")
        assert made.post({"model": f"openai/{name}"}).status_code == 404
    real = f"gpt-real-{uuid.uuid4().hex[:8]}"  # not in the catalog, and the provider answers it
    assert made.post({"model": f"openai/{real}"}).status_code == 200
    assert made.post({"model": "openai/gpt-4o-mini"}).status_code == 200  # in the catalog
    samples = scrape(gateway)
    models = {
        dict(labels).get("gen_ai_request_model") for name, labels in samples if name.startswith(DURATION)
    }
    assert not any(name in models for name in bogus)
    assert samples.value(f"{DURATION}_count", **CHAT, error_type="") == 1
    answered = {
        "gen_ai_provider_name": "openai",
        "gen_ai_request_model": real,
        "gen_ai_operation_name": "chat",
    }
    assert samples.value(f"{DURATION}_count", **answered, error_type="") == 1
    other = {**answered, "gen_ai_request_model": "other"}
    assert samples.total(f"{DURATION}_count", **other) == len(bogus)


def test_a_fallback_counts_the_attempt_moved_on_from_and_its_upstream_error(
    metered: Gateway, fake_provider: Any
) -> None:

    user = metered.user()
    sdk = openai_client(metered, user)
    caller = Caller(user=user, sdk=sdk, fake_provider=fake_provider)
    caller.add_key("openai", key("down"))
    caller.add_key("anthropic", key())
    before = scrape(metered)
    raw = caller.chat()
    moved = scrape(metered).minus(before)
    assert raw.headers["x-switchboard-attempts"] == "2"
    assert moved.total("switchboard_fallbacks_total") == 1
    assert moved.value("switchboard_upstream_errors_total", provider="openai", kind="LLM_FAILED") == 1
    haiku = {"gen_ai_provider_name": "anthropic", "gen_ai_request_model": "claude-3-5-haiku-latest"}
    # The call is observed once, as the attempt that answered it.
    assert moved.total(f"{DURATION}_count") == 1
    assert moved.value(f"{DURATION}_count", **haiku, gen_ai_operation_name="chat", error_type="") == 1


def test_a_limit_rejection_is_counted_and_observes_no_call(metered: Gateway, caller: Caller) -> None:
    admin = metered.user("Admin")
    limit = {
        "subject_type": "user",
        "subject_id": str(caller.user.id),
        "metric": "requests",
        "window": "minute",
        "amount": "1",
    }
    created = admin.client.post("/limits", json=limit)
    assert created.status_code == 201, created.text
    before = scrape(metered)
    assert caller.post({"model": "openai/gpt-4o-mini"}).status_code == 200
    assert caller.post({"model": "openai/gpt-4o-mini"}).status_code == 429
    moved = scrape(metered).minus(before)
    assert moved.total("switchboard_limit_rejections_total") == 1
    assert moved.value("switchboard_requests_total", endpoint="chat.completions", status="429") == 1
    assert moved.value("switchboard_requests_total", endpoint="chat.completions", status="200") == 1
    assert moved.total(f"{DURATION}_count") == 1  # the call that ran; the refused one never started


def test_streams_in_flight_counts_a_stream_while_it_is_relayed(
    metered: Gateway, caller: Caller, fake_provider: Any
) -> None:
    model = f"stalling-{uuid.uuid4().hex[:8]}"
    fake_provider.script(model, stall_after=2)  # two events, then silence until the client leaves
    assert scrape(metered).value("switchboard_streams_in_flight") == 0
    body = {"model": f"openai/{model}", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with (
        httpx.Client(
            base_url=metered.url, headers={"authorization": f"Bearer {caller.user.token}"}
        ) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        chunks = response.iter_bytes()  # kept: a dropped iterator would close the response
        assert next(chunks)  # the stream has begun, and stalls
        assert scrape(metered).value("switchboard_streams_in_flight") == 1
    # The client left: the gateway ends the stream (and settles it) once it notices.
    deadline = time.monotonic() + 10
    while scrape(metered).value("switchboard_streams_in_flight") != 0:
        assert time.monotonic() < deadline, "the abandoned stream still counts as in flight"
        time.sleep(0.05)


def test_the_usage_writer_reports_each_batch_and_its_queue(metered: Gateway, caller: Caller) -> None:
    writer = metered.app.state.call_sink
    before, batches = scrape(metered), writer.batches
    for _ in range(3):
        caller.chat()
    moved = scrape(metered).minus(before)
    assert moved.value("switchboard_usage_writer_commit_seconds_count") == writer.batches - batches >= 1
    assert scrape(metered).value("switchboard_usage_writer_queue_depth") == 0


def test_no_label_or_help_text_carries_a_user_key_token_or_prompt(metered: Gateway, caller: Caller) -> None:
    marker = f"prompt-marker-{uuid.uuid4().hex}"
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": marker}]}
    assert caller.user.client.post("/v1/chat/completions", json=body).status_code == 200
    response = httpx.get(f"{metered.url}/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
    text = response.text
    secrets = [
        marker,
        str(caller.user.id),
        caller.user.token,
        METRICS_TOKEN,
        *caller.credential_keys.values(),
    ]
    secrets += list(caller.credential_keys)  # credential ids
    assert not [secret for secret in secrets if secret in text]
