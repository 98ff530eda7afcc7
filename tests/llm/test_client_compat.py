"""What real clients send: bare model names, the legacy completions API, trailing slashes, stream ids."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.llm.conftest import Caller, make_caller, unique_model
from tests.support.gateway import Gateway, User

MESSAGES = [{"role": "user", "content": "hi"}]


def records_of(user: User, request_id: str, count: int = 1) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 5
    while True:
        data = user.client.get("/usage/me", params={"limit": 500}).json()["data"]
        found = [r for r in data if r["request_id"] == request_id]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


# --- bare model names -------------------------------------------------------------------------


def test_a_bare_model_name_resolves_to_its_one_catalog_model(caller: Caller, fake_provider: Any) -> None:
    raw = caller.sdk.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=MESSAGES)
    assert raw.headers["x-switchboard-model"] == "openai/gpt-4o-mini"
    assert raw.parse().choices[0].message.content


def test_an_unknown_bare_name_is_still_model_not_found(caller: Caller) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        caller.sdk.chat.completions.create(model="no-such-model-anywhere", messages=MESSAGES)
    assert caught.value.code == "model_not_found"


@pytest.fixture(scope="module")
def twin_gateway(make_gateway: GatewayFactory, fake_provider: Any) -> Gateway:
    """A catalog where `shared-model` exists at two providers and `solo` at one."""
    config = default_test_config(fake_provider.base_url)
    config["models"] += [
        {"provider": "openai", "model": "shared-model"},
        {"provider": "gemini", "model": "shared-model"},
        {"provider": "anthropic", "model": "solo"},
    ]
    config["aliases"]["gpt-4o-mini-alias"] = "openai/gpt-4o-mini"
    return make_gateway(config=config)


@pytest.fixture
def twin_caller(twin_gateway: Gateway, fake_provider: Any) -> Iterator[Caller]:
    made = make_caller(twin_gateway, fake_provider)
    yield made
    made.sdk.close()


def test_a_bare_name_two_providers_share_is_ambiguous_and_names_both(twin_caller: Caller) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        twin_caller.sdk.chat.completions.create(model="shared-model", messages=MESSAGES)
    assert caught.value.code == "ambiguous_model"
    assert "openai/shared-model" in caught.value.message
    assert "gemini/shared-model" in caught.value.message


def test_models_lists_bare_names_only_where_they_are_unambiguous(twin_caller: Caller) -> None:
    ids = [m.id for m in twin_caller.sdk.models.list()]
    assert "solo" in ids and "anthropic/solo" in ids
    assert "gpt-4o-mini" in ids
    assert "shared-model" not in ids
    assert {"openai/shared-model", "gemini/shared-model"} <= set(ids)
    assert twin_caller.sdk.models.retrieve("solo").owned_by == "anthropic"


# --- trailing slashes -------------------------------------------------------------------------


def test_a_trailing_slash_is_served_as_without_it_and_never_redirected(caller: Caller) -> None:
    client = caller.user.client
    response = client.post(
        "/v1/chat/completions/", json={"model": "openai/gpt-4o-mini", "messages": MESSAGES}
    )
    assert response.status_code == 200, response.text
    assert response.json()["object"] == "chat.completion"
    listed = client.get("/v1/models/")
    assert listed.status_code == 200
    assert listed.json()["data"]
    assert client.get("/v1/models/gpt-4o-mini/").json()["id"] == "gpt-4o-mini"
    assert (
        client.post(
            "/v1/embeddings/", json={"model": "openai/text-embedding-3-small", "input": "x"}
        ).status_code
        == 200
    )


# --- legacy completions -----------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_legacy_completions_answer_text_completion_objects_and_are_metered(
    caller: Caller, fake_provider: Any, provider: str
) -> None:
    model = unique_model(provider[:3])
    fake_provider.script(model, reply="Once upon a time.", prompt_tokens=5, completion_tokens=4)
    raw = caller.sdk.completions.with_raw_response.create(
        model=f"{provider}/{model}", prompt="Tell me a story", max_tokens=20
    )
    completion = raw.parse()
    assert completion.object == "text_completion"
    assert completion.choices[0].text == "Once upon a time."
    assert completion.choices[0].finish_reason in ("stop", "length")
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (5, 4)
    (seen,) = fake_provider.received(model)
    if provider == "openai":
        assert seen.path.endswith("/v1/completions")  # relayed, not translated
        assert seen.body["prompt"] == "Tell me a story"
    (record,) = records_of(caller.user, raw.headers["x-request-id"])
    assert record["endpoint"] == "completions"
    assert (record["prompt_tokens"], record["completion_tokens"], record["status"]) == (5, 4, "ok")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_legacy_completions_stream_text_chunks_with_one_id(
    caller: Caller, fake_provider: Any, provider: str
) -> None:
    model = unique_model(provider[:3])
    fake_provider.script(model, reply="one two three four", prompt_tokens=6, completion_tokens=4)
    stream = caller.sdk.completions.create(
        model=f"{provider}/{model}", prompt="count", stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == "one two three four"
    assert {c.object for c in chunks} == {"text_completion"}
    assert len({c.id for c in chunks}) == 1
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4


def test_legacy_features_no_chat_model_has_are_refused_for_other_providers(caller: Caller) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        caller.sdk.completions.create(model="anthropic/claude-3-5-haiku-latest", prompt="x", echo=True)
    assert caught.value.code == "unsupported_parameter"
    with pytest.raises(openai.BadRequestError):
        caller.sdk.completions.create(model="gemini/gemini-2.0-flash", prompt=["a", "b"])


def test_a_completions_body_without_a_prompt_is_400(caller: Caller) -> None:
    response = caller.user.client.post("/v1/completions", json={"model": "openai/gpt-4o-mini"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "prompt"


# --- stream ids -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "response_ids"),
    [("openai", True), ("anthropic", True), ("gemini", True), ("gemini", False)],
)
def test_every_chunk_of_one_stream_carries_the_same_id(
    caller: Caller, fake_provider: Any, provider: str, response_ids: bool
) -> None:
    model = unique_model(provider[:3])
    fake_provider.script(model, reply="alpha beta gamma delta epsilon", response_ids=response_ids)
    chunks = list(
        caller.sdk.chat.completions.create(
            model=f"{provider}/{model}",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert len(chunks) >= 4
    assert len({c.id for c in chunks}) == 1, [c.id for c in chunks]


# --- CORS -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cors_gateway(make_gateway: GatewayFactory) -> Gateway:
    return make_gateway(env={"SWITCHBOARD_CORS_ORIGINS": "https://app.example.com, http://localhost:5173"})


def test_cors_is_off_by_default(gateway: Gateway) -> None:
    response = httpx.options(
        f"{gateway.url}/v1/chat/completions",
        headers={"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in response.headers


def test_a_preflight_from_a_listed_origin_is_answered(cors_gateway: Gateway) -> None:
    response = httpx.options(
        f"{cors_gateway.url}/v1/chat/completions",
        headers={
            "Origin": "https://app.example.com",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "authorization" in response.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in response.headers


def test_a_preflight_from_another_origin_is_refused(cors_gateway: Gateway) -> None:
    response = httpx.options(
        f"{cors_gateway.url}/v1/chat/completions",
        headers={"Origin": "https://evil.example.net", "Access-Control-Request-Method": "POST"},
    )
    assert response.status_code == 400
    assert "access-control-allow-origin" not in response.headers


def test_cors_answers_expose_the_gateway_headers(cors_gateway: Gateway, fake_provider: Any) -> None:
    caller = make_caller(cors_gateway, fake_provider, providers=("openai",))
    response = caller.user.client.post(
        "/v1/chat/completions",
        json={"model": "openai/gpt-4o-mini", "messages": MESSAGES},
        headers={"Origin": "http://localhost:5173"},
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "http://localhost:5173"
    exposed = response.headers["access-control-expose-headers"].lower()
    assert "x-request-id" in exposed and "x-switchboard-model" in exposed
    # Only /v1 is opened to browsers.
    other = caller.user.client.get("/llm-credentials", headers={"Origin": "http://localhost:5173"})
    assert "access-control-allow-origin" not in other.headers


def test_a_bad_cors_origin_setting_refuses_to_start() -> None:
    from switchboard.settings import SettingsError, parse_cors_origins

    assert parse_cors_origins("*") == ("*",)
    assert parse_cors_origins(" https://a.example/ ,http://b:3000") == ("https://a.example", "http://b:3000")
    for bad in ("app.example.com", "ftp://x", "https://x/path"):
        with pytest.raises(SettingsError):
            parse_cors_origins(bad)
