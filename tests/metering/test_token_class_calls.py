"""End to end (SPEC §20): each token class priced as the provider prices it, through the official openai
and anthropic SDKs against the fake provider; one provider answer gives one record on every surface."""

from __future__ import annotations

import logging
import time
import uuid
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import anthropic
import openai
import orjson
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes import anthropic_wire
from tests.llm.conftest import add_credential, provider_base
from tests.support.gateway import Gateway, User

# The catalog prices gpt-4o-mini's cache reads at half its input price, as OpenAI does. Models the
# catalog leaves out (claude-sonnet-4-5, gpt-5, gemini-2.5-pro) are priced from litellm's map.
MINI = {"input_per_mtok": "0.15", "cache_read_per_mtok": "0.075", "output_per_mtok": "0.60"}
SONNET = {"input": "3", "cache_read": "0.3", "cache_write": "3.75", "cache_write_1h": "6", "output": "15"}
SONNET_200K = {
    "input": "6",
    "cache_read": "0.6",
    "cache_write": "7.5",
    "cache_write_1h": "12",
    "output": "22.5",
}


def nanos(tokens: dict[str, int], prices: dict[str, str]) -> str:
    """The expected cost, computed from the provider's published prices independently of the gateway."""
    exact = sum(count * Decimal(prices[name]) for name, count in tokens.items()) * 1000
    return str(int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP)))


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    config = default_test_config(fake_provider.base_url)
    config["models"] = [
        {**entry, **MINI} if entry["model"] == "gpt-4o-mini" else entry for entry in config["models"]
    ]
    return make_gateway(config=config)


@pytest.fixture(scope="module")
def user(gateway: Gateway, fake_provider: Any) -> User:
    made = gateway.user()
    for kind in ("openai", "anthropic", "gemini"):
        add_credential(made, kind, provider_base(fake_provider, kind))
    return made


def record_of(user: User, request_id: str) -> dict[str, Any]:
    """The call's one record, once it is there (a stream's is written as the gateway's side unwinds,
    which can be after the client has read the last event), polled for up to 10 s."""
    deadline = time.monotonic() + 10
    while True:
        data = user.client.get("/usage/me", params={"limit": 500}).json()["data"]
        found = [r for r in data if r["request_id"] == request_id]
        if found or time.monotonic() > deadline:
            assert len(found) == 1, found
            return dict(found[0])
        time.sleep(0.05)


def _rid() -> dict[str, str]:
    return {"x-request-id": uuid.uuid4().hex}


def chat(sdk: openai.OpenAI, model: str, stream: bool) -> str:
    messages: Any = [{"role": "user", "content": "hi"}]
    headers = _rid()
    if stream:
        chunks = sdk.chat.completions.create(
            model=model,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
            extra_headers=headers,
        )
        assert [c for c in chunks if c.usage is not None]
    else:
        answer = sdk.chat.completions.create(model=model, messages=messages, extra_headers=headers)
        assert answer.usage is not None
    return headers["x-request-id"]


def respond(sdk: openai.OpenAI, model: str, stream: bool) -> str:
    headers = _rid()
    if stream:
        events = list(sdk.responses.create(model=model, input="hi", stream=True, extra_headers=headers))
        assert events[-1].type == "response.completed"
    else:
        assert sdk.responses.create(model=model, input="hi", extra_headers=headers).usage is not None
    return headers["x-request-id"]


def message(sdk: anthropic.Anthropic, model: str, stream: bool) -> tuple[str, anthropic.types.Usage]:
    headers = _rid()
    messages: Any = [{"role": "user", "content": "hi"}]
    if stream:
        with sdk.messages.stream(model=model, max_tokens=1024, messages=messages, extra_headers=headers) as s:
            return headers["x-request-id"], s.get_final_message().usage
    answer = sdk.messages.create(model=model, max_tokens=1024, messages=messages, extra_headers=headers)
    return headers["x-request-id"], answer.usage


SURFACES = [("chat", False), ("chat", True), ("responses", False), ("responses", True)]


@pytest.mark.parametrize(
    ("surface", "stream"), SURFACES, ids=[f"{s}-{'stream' if t else 'json'}" for s, t in SURFACES]
)
def test_openai_cache_reads_are_priced_at_the_cache_read_price(
    openai_sdk: openai.OpenAI, user: User, fake_provider: Any, surface: str, stream: bool
) -> None:
    # The call: half of 578 prompt tokens from OpenAI's cache, 7 out: billed 69,225 nano-USD.
    fake_provider.enqueue("gpt-4o-mini", prompt_tokens=578, cached_tokens=289, completion_tokens=7)
    rid = (chat if surface == "chat" else respond)(openai_sdk, "openai/gpt-4o-mini", stream)
    record = record_of(user, rid)
    assert (record["prompt_tokens"], record["cached_tokens"], record["cache_write_tokens"]) == (578, 289, 0)
    assert record["cost"] == "69225"
    assert record["prices"] == {
        "input": "0.15",
        "output": "0.60",
        "cache_read": "0.075",
        "cache_write": "0.15",
        "cache_write_1h": "0.15",
        "reasoning": "0.60",
    }


@pytest.mark.parametrize(
    ("tier", "prices"), [("flex", ("0.625", "0.0625", "5")), ("priority", ("2.5", "0.25", "20"))]
)
def test_openai_service_tier_is_recorded_and_priced_at_that_tier(
    openai_sdk: openai.OpenAI, user: User, fake_provider: Any, tier: str, prices: tuple[str, str, str]
) -> None:
    fake_provider.enqueue(
        "gpt-5",
        prompt_tokens=1000,
        cached_tokens=400,
        completion_tokens=300,
        reasoning_tokens=200,
        service_tier=tier,
    )
    rid = chat(openai_sdk, "openai/gpt-5", stream=True)
    record = record_of(user, rid)
    assert (record["service_tier"], record["reasoning_tokens"]) == (tier, 200)
    inp, read, out = prices
    expected = nanos(
        {"input": 600, "cache_read": 400, "output": 300}, {"input": inp, "cache_read": read, "output": out}
    )
    assert record["cost"] == expected
    assert record["price_source"] == "litellm"


AGENT_TURN = {
    "prompt_tokens": 102_050,
    "cached_tokens": 100_000,
    "cache_write_tokens": 2_000,
    "completion_tokens": 500,
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_an_agent_turn_on_anthropic_is_metered_alike_on_messages_and_chat(
    anthropic_sdk: anthropic.Anthropic,
    openai_sdk: openai.OpenAI,
    user: User,
    fake_provider: Any,
    stream: bool,
) -> None:
    """The issue's coding-agent turn: 100k read from cache, 2k written, 50 new, 500 out, ~$0.045."""
    fake_provider.enqueue("claude-sonnet-4-5", **AGENT_TURN, cache_write_1h_tokens=500)
    rid, usage = message(anthropic_sdk, "anthropic/claude-sonnet-4-5", stream)
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens, usage.input_tokens) == (
        100_000,
        2_000,
        50,
    )
    relayed = record_of(user, rid)
    fake_provider.enqueue("claude-sonnet-4-5", **AGENT_TURN, cache_write_1h_tokens=500)
    rid = chat(openai_sdk, "anthropic/claude-sonnet-4-5", stream)
    translated = record_of(user, rid)

    classes = (
        "prompt_tokens",
        "cached_tokens",
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "completion_tokens",
    )
    assert (
        {k: relayed[k] for k in classes}
        == {k: translated[k] for k in classes}
        == {
            **{k: v for k, v in AGENT_TURN.items()},
            "cache_write_1h_tokens": 500,
        }
    )
    expected = nanos(
        {"input": 50, "cache_read": 100_000, "cache_write": 1_500, "cache_write_1h": 500, "output": 500},
        SONNET,
    )
    assert relayed["cost"] == translated["cost"] == expected == "46275000"  # $0.046, not $0.31
    assert relayed["endpoint"] != translated["endpoint"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_prompt_above_200k_tokens_is_priced_at_the_long_context_tier(
    anthropic_sdk: anthropic.Anthropic, user: User, fake_provider: Any, stream: bool
) -> None:
    fake_provider.enqueue(
        "claude-sonnet-4-5",
        prompt_tokens=250_000,
        cached_tokens=40_000,
        cache_write_tokens=10_000,
        completion_tokens=100,
    )
    rid, _ = message(anthropic_sdk, "anthropic/claude-sonnet-4-5", stream)
    record = record_of(user, rid)
    tokens = {"input": 200_000, "cache_read": 40_000, "cache_write": 10_000, "output": 100}
    assert record["cost"] == nanos(tokens, SONNET_200K)
    assert record["prices"]["input"] == "6" and record["prices"]["cache_write_1h"] == "12"


def test_gemini_cached_content_and_thoughts_are_priced_by_class(
    openai_sdk: openai.OpenAI, user: User, fake_provider: Any
) -> None:
    fake_provider.enqueue(
        "gemini-2.5-pro", prompt_tokens=1000, cached_tokens=600, completion_tokens=50, reasoning_tokens=30
    )
    rid = chat(openai_sdk, "gemini/gemini-2.5-pro", stream=False)
    record = record_of(user, rid)
    assert (record["cached_tokens"], record["reasoning_tokens"]) == (600, 30)
    assert record["cost"] == nanos(
        {"input": 400, "cache_read": 600, "output": 50},
        {"input": "1.25", "cache_read": "0.125", "output": "10"},
    )


def test_an_economy_override_prices_every_class_before_the_catalog_and_litellm(
    gateway: Gateway, openai_sdk: openai.OpenAI, user: User, fake_provider: Any
) -> None:
    """The override names the model, so it gives all its prices; its long-context tier applies above
    200k prompt tokens; a class it leaves out takes its input (cache) or output (reasoning) price."""
    admin = gateway.user(role="Admin")
    override = {
        "input_per_mtok": "2",
        "cache_read_per_mtok": "0.5",
        "output_per_mtok": "8",
        "reasoning_per_mtok": "9",
        "above_200k": {"input_per_mtok": "4", "output_per_mtok": "16"},
    }
    body = {
        "slug": f"tc-{uuid.uuid4().hex[:8]}",
        "name": "Classes",
        "price_overrides": {"anthropic/claude-sonnet-4-5": override},
    }
    created = admin.client.post("/economies", json=body)
    assert created.status_code == 201, created.text
    assert created.json()["price_overrides"]["anthropic/claude-sonnet-4-5"] == {
        **override,
        "above_200k": {"input_per_mtok": "4", "output_per_mtok": "16"},
    }
    joined = admin.client.post(
        f"/economies/{body['slug']}/participants", json={"user_id": str(user.id), "role": "member"}
    )
    assert joined.status_code in (200, 201), joined.text
    sdk = openai_sdk.with_options(default_headers={"x-economy-id": body["slug"]})

    fake_provider.enqueue(
        "claude-sonnet-4-5",
        prompt_tokens=1000,
        cached_tokens=600,
        cache_write_tokens=100,
        completion_tokens=10,
    )
    rid = chat(sdk, "anthropic/claude-sonnet-4-5", stream=False)
    record = record_of(user, rid)
    # Cache writes are left out of the override: they take its input price, not litellm's 3.75.
    prices = {"input": "2", "cache_read": "0.5", "cache_write": "2", "output": "8"}
    assert record["cost"] == nanos(
        {"input": 300, "cache_read": 600, "cache_write": 100, "output": 10}, prices
    )
    assert record["price_source"] == "override"

    fake_provider.enqueue(
        "claude-sonnet-4-5", prompt_tokens=300_000, cached_tokens=100_000, completion_tokens=10
    )
    rid = chat(sdk, "anthropic/claude-sonnet-4-5", stream=True)
    record = record_of(user, rid)
    # Above 200k: the tier's input price for every input class it leaves out, its output price.
    tier = {"input": "4", "cache_read": "4", "output": "16"}
    assert record["cost"] == nanos({"input": 200_000, "cache_read": 100_000, "output": 10}, tier)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_start_up_warns_of_catalog_prices_without_the_cache_prices_litellm_has(
    make_gateway: GatewayFactory, fake_provider: Any
) -> None:
    config = default_test_config(fake_provider.base_url)
    sonnet = {"provider": "anthropic", "model": "claude-sonnet-4-5", "input_per_mtok": "3"}
    config["models"] = [
        {**entry, **MINI} if entry["model"] == "gpt-4o-mini" else entry for entry in config["models"]
    ] + [{**sonnet, "output_per_mtok": "15"}]
    # The gateway's logging stops records at the `switchboard` logger: listen on the metering one.
    kept = _Kept()
    logger = logging.getLogger("switchboard.metering")
    logger.addHandler(kept)
    try:
        make_gateway(config=config)
    finally:
        logger.removeHandler(kept)
    warned = [message for message in kept.messages if "without cache prices" in message]
    assert len(warned) == 1 and "anthropic/claude-sonnet-4-5" in warned[0]
    assert "gpt-4o-mini" not in warned[0]  # MINI states its cache read price


def test_exports_carry_the_classes_after_every_earlier_column(
    gateway: Gateway, user: User, openai_sdk: openai.OpenAI, fake_provider: Any
) -> None:
    fake_provider.enqueue("gpt-4o-mini", prompt_tokens=578, cached_tokens=289, completion_tokens=7)
    rid = chat(openai_sdk, "openai/gpt-4o-mini", stream=False)
    admin = gateway.user(role="Admin")
    csv_text = admin.client.get("/economies/default/usage/export", params={"format": "csv"}).text
    header = csv_text.splitlines()[0].split(",")
    classes = ["cache_write_tokens", "cache_write_1h_tokens", "service_tier", "prices"]
    assert header[-5:] == [*classes, "cache_hit"]  # the response cache's column came after them
    assert header.index("attempt") < header.index("cache_write_tokens")  # new columns come last
    lines = admin.client.get("/economies/default/usage/export", params={"format": "ndjson"}).text
    [mine] = [orjson.loads(line) for line in lines.splitlines() if rid in line]
    assert (mine["cached_tokens"], mine["prices"]["cache_read"]) == (289, "0.075")
    summary = admin.client.get("/economies/default/usage/summary", params={"group_by": "model"}).json()
    assert {"cached_tokens", "cache_write_tokens", "reasoning_tokens"} <= set(summary["totals"])


ITERATIONS_USAGE = {
    "input_tokens": 50,
    "cache_read_input_tokens": 1_200,
    "cache_creation_input_tokens": 0,
    "output_tokens": 60,
    "iterations": [
        {
            "input_tokens": 100,
            "cache_read_input_tokens": 1_000,
            "cache_creation_input_tokens": 200,
            "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 100},
            "output_tokens": 40,
        },
        {
            "input_tokens": 50,
            "cache_read_input_tokens": 1_200,
            "cache_creation_input_tokens": 0,
            "output_tokens": 60,
        },
    ],
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_one_anthropic_answer_with_iterations_and_thinking_gives_one_record_on_both_surfaces(
    anthropic_sdk: anthropic.Anthropic,
    openai_sdk: openai.OpenAI,
    user: User,
    fake_provider: Any,
    stream: bool,
) -> None:
    """Relayed to /v1/messages or translated for /v1/chat/completions, the same answer is read by one
    reader: its iterations summed, its one-hour writes apart, its thinking counted alike."""
    answer = anthropic_wire.message(
        [
            anthropic_wire.thinking("Let me weigh the options step by step before answering."),
            anthropic_wire.text("42"),
        ],
        usage=ITERATIONS_USAGE,
    )

    def enqueue() -> None:
        if stream:
            fake_provider.enqueue("claude-sonnet-4-5", answer_events=anthropic_wire.stream_of(answer))
        else:
            fake_provider.enqueue("claude-sonnet-4-5", answer=answer)

    enqueue()
    rid, _ = message(anthropic_sdk, "anthropic/claude-sonnet-4-5", stream)
    relayed = record_of(user, rid)
    enqueue()
    rid = chat(openai_sdk, "anthropic/claude-sonnet-4-5", stream)
    translated = record_of(user, rid)
    classes = (
        "prompt_tokens",
        "cached_tokens",
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "completion_tokens",
        "reasoning_tokens",
        "cost",
    )
    assert {k: relayed[k] for k in classes} == {k: translated[k] for k in classes}
    assert (relayed["prompt_tokens"], relayed["cached_tokens"], relayed["cache_write_1h_tokens"]) == (
        2_550,
        2_200,
        100,
    )
    assert relayed["completion_tokens"] == 100 and 0 < relayed["reasoning_tokens"] < 100
