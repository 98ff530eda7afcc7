"""Long-tail providers through a real gateway (SPEC §15): credentials over the API, JSON secrets for
azure and bedrock, exact selectors, catalog entries, metering, and GET /providers."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes.provider import FakeProvider
from tests.support.gateway import Gateway, User
from tests.support.recorder import RECORDER
from tests.support.sdks import openai_client

MESSAGES = [{"role": "user", "content": "hi"}]
AZURE_VERSION = "2024-10-21"
DEPLOYMENT_ENV = f"SWITCHBOARD_TEST_AZURE_{uuid.uuid4().hex[:8].upper()}"
DEPLOYMENT_KEY = RECORDER.remember_secret(f"az-deployment-{uuid.uuid4().hex}")


@pytest.fixture(scope="module")
def gateway(make_gateway: GatewayFactory, fake_provider: FakeProvider) -> Iterator[Gateway]:
    """The catalog lists a mistral model (priced from litellm's map) and lends an azure deployment key."""
    config = default_test_config(fake_provider.base_url)
    config["models"].append({"provider": "mistral", "model": "mistral-small-latest", "tags": ["eu"]})
    config["aliases"]["eu"] = "mistral/mistral-small-latest"
    config["deployment_credentials"] = [
        {"provider": "azure", "api_key_env": DEPLOYMENT_ENV, "base_url": fake_provider.base_url}
    ]
    os.environ[DEPLOYMENT_ENV] = f'{{"api_key": "{DEPLOYMENT_KEY}", "api_version": "{AZURE_VERSION}"}}'
    yield make_gateway(config)
    del os.environ[DEPLOYMENT_ENV]


def sdk(gateway: Gateway, user: User) -> openai.OpenAI:
    return openai_client(gateway, user)


def azure_secret() -> dict[str, str]:
    return {"api_key": RECORDER.remember_secret(f"az-{uuid.uuid4().hex}"), "api_version": AZURE_VERSION}


def create(user: User, provider: str, secret: Any, base_url: str | None) -> Any:
    return user.client.post(
        "/llm-credentials", json={"provider": provider, "secret": secret, "base_url": base_url}
    )


def records(user: User) -> list[dict[str, Any]]:
    # A successful call's record is committed before its answer is sent (SPEC §8).
    data: list[dict[str, Any]] = user.client.get("/usage/me", params={"limit": 500}).json()["data"]
    return data


def test_a_mistral_credential_serves_the_exact_selector_metered_and_priced_as_mistral(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    user = gateway.user()
    key = RECORDER.remember_secret(f"mistral-{uuid.uuid4().hex}")
    created = create(user, "mistral", key, f"{fake_provider.base_url}/v1")
    assert created.status_code == 201, created.text
    assert created.json()["provider"] == "mistral" and key not in created.text
    raw = sdk(gateway, user).chat.completions.with_raw_response.create(
        model="mistral/mistral-small-latest", messages=MESSAGES
    )
    assert raw.parse().choices[0].message.content
    assert raw.headers["x-switchboard-model"] == "mistral/mistral-small-latest"
    assert raw.headers["x-switchboard-credential"] == created.json()["id"]
    [seen] = [r for r in fake_provider.received("mistral-small-latest") if r.api_key == key]
    assert seen.path == "/v1/chat/completions"
    [record] = records(user)
    assert (record["provider"], record["model"], record["status"]) == (
        "mistral",
        "mistral-small-latest",
        "ok",
    )
    assert record["credential_id"] == created.json()["id"] and record["credential_scope"] == "user"
    # litellm's cost map: 0.15 and 0.60 USD per million tokens; the fake counts 11 in and 7 out.
    assert (record["prompt_tokens"], record["completion_tokens"]) == (11, 7)
    assert (record["cost"], record["priced"]) == ("5850", True)


def test_the_catalog_may_list_a_long_tail_model_streamed_through_its_alias(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    user = gateway.user()
    created = create(user, "mistral", f"mistral-{uuid.uuid4().hex}", f"{fake_provider.base_url}/v1")
    assert created.status_code == 201, created.text
    stream = sdk(gateway, user).chat.completions.create(model="eu", messages=MESSAGES, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    [record] = records(user)
    assert (record["provider"], record["selector"], record["stream"]) == ("mistral", "eu", True)
    assert record["status"] == "ok"


def test_an_azure_credential_takes_a_json_secret_and_serves_its_deployments(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    user = gateway.user()
    secret = azure_secret()
    created = create(user, "azure", secret, fake_provider.base_url)
    assert created.status_code == 201, created.text
    shown = user.client.get(f"/llm-credentials/{created.json()['id']}")
    for body in (created.text, shown.text):
        assert secret["api_key"] not in body and AZURE_VERSION not in body
    assert shown.json()["secret_hint"] == secret["api_key"][-4:]
    deployment = f"gpt-4o-mini-{uuid.uuid4().hex[:6]}"
    client = sdk(gateway, user)
    answer = client.chat.completions.create(model=f"azure/{deployment}", messages=MESSAGES)
    assert answer.choices[0].message.content
    chunks = client.chat.completions.create(model=f"azure/{deployment}", messages=MESSAGES, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    seen = fake_provider.received(deployment)
    assert [r.path for r in seen] == [f"/openai/deployments/{deployment}/chat/completions"] * 2
    assert {(r.query, r.headers["api-key"]) for r in seen} == {
        (f"api-version={AZURE_VERSION}", secret["api_key"])
    }
    assert [(r["provider"], r["model"], r["stream"]) for r in records(user)] == [
        ("azure", deployment, False),
        ("azure", deployment, True),
    ]


def test_a_deployment_credential_may_be_azure_with_its_json_secret_in_the_environment(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    user = gateway.user()
    deployment = f"dep-{uuid.uuid4().hex[:8]}"
    raw = sdk(gateway, user).chat.completions.with_raw_response.create(
        model=f"azure/{deployment}", messages=MESSAGES
    )
    assert raw.headers["x-switchboard-credential"] == "deployment"
    [seen] = fake_provider.received(deployment)
    assert seen.api_key == DEPLOYMENT_KEY
    [record] = records(user)
    assert (record["provider"], record["credential_scope"]) == ("azure", "deployment")


@pytest.mark.parametrize(
    ("provider", "secret", "base_url", "named"),
    [
        ("azure", {"api_key": "az-0123456789abcdef"}, "fake", "api_version"),
        ("azure", {"api_version": AZURE_VERSION}, "fake", "api_key"),
        ("azure", {"api_key": "az-0123456789abcdef", "apiVersion": "x"}, "fake", "apiVersion"),
        ("azure", "az-0123456789abcdef", "fake", "JSON object"),
        ("azure", {"api_key": "az-0123456789abcdef", "api_version": AZURE_VERSION}, None, "base_url"),
        ("bedrock", {"aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": "s3cr3t-0123456789"}, None,
         "aws_region_name"),
        ("mistral", {"api_key": "mistral-0123456789abcdef"}, None, "one string"),
        ("no-such-provider", "sk-0123456789abcdef", None, "unknown provider"),
        ("vertex_ai", "sk-0123456789abcdef", None, "host's own identity"),
    ],
)  # fmt: skip
def test_a_secret_or_provider_that_does_not_fit_is_a_400_and_nothing_is_stored(
    gateway: Gateway,
    fake_provider: FakeProvider,
    provider: str,
    secret: Any,
    base_url: str | None,
    named: str,
) -> None:
    user = gateway.user()
    answer = create(user, provider, secret, fake_provider.base_url if base_url == "fake" else base_url)
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["code"] == "VALIDATION_FAILED" and named in body["error"]
    values = secret.values() if isinstance(secret, dict) else [secret]
    assert not any(value in answer.text for value in values if len(value) > 12)
    assert user.client.get("/llm-credentials").json()["data"] == []


def test_a_bedrock_credential_takes_its_key_pair_and_region_and_hints_at_the_key_id(gateway: Gateway) -> None:
    user = gateway.user()
    secret = {
        "aws_access_key_id": "AKIAEXAMPLE7Q2Z",
        "aws_secret_access_key": RECORDER.remember_secret(f"aws-{uuid.uuid4().hex}"),
        "aws_region_name": "eu-west-1",
    }
    created = create(user, "bedrock", secret, None)
    assert created.status_code == 201, created.text
    assert created.json()["secret_hint"] == "7Q2Z" and secret["aws_secret_access_key"] not in created.text


def test_rotating_an_azure_secret_is_checked_the_same_way(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    user = gateway.user()
    created = create(user, "azure", azure_secret(), fake_provider.base_url).json()
    path = f"/llm-credentials/{created['id']}"
    refused = user.client.patch(path, json={"secret": {"api_key": "az-new-0123456789"}})
    assert refused.status_code == 400 and "api_version" in refused.json()["error"]
    assert user.client.patch(path, json={"base_url": None}).status_code == 400  # azure needs one
    rotated = azure_secret()
    changed = user.client.patch(path, json={"secret": rotated})
    assert changed.status_code == 200 and changed.json()["secret_hint"] == rotated["api_key"][-4:]
    deployment = f"dep-{uuid.uuid4().hex[:8]}"
    sdk(gateway, user).chat.completions.create(model=f"azure/{deployment}", messages=MESSAGES)
    [seen] = fake_provider.received(deployment)
    assert seen.api_key == rotated["api_key"]


def test_get_providers_lists_every_kind_for_any_signed_in_user(gateway: Gateway) -> None:
    assert gateway.client().get("/providers").status_code == 401
    viewer = gateway.user(role="Viewer")
    first = viewer.client.get("/providers")
    assert first.status_code == 200 and len(first.json()["data"]) == 50
    kinds: dict[str, dict[str, Any]] = {}
    cursor = None
    while True:
        page = viewer.client.get("/providers", params={"cursor": cursor} if cursor else {}).json()
        kinds.update({entry["kind"]: entry for entry in page["data"]})
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert list(kinds) == sorted(kinds) and len(kinds) > 100
    assert kinds == {
        e["kind"]: e for e in viewer.client.get("/providers", params={"limit": 500}).json()["data"]
    }
    assert {k for k, e in kinds.items() if e["native"]} == {"openai", "anthropic", "gemini"}
    assert kinds["mistral"] == {
        "kind": "mistral",
        "native": False,
        "credential_format": "string",
        "json_fields": [],
        "optional_json_fields": [],
        "base_url": "optional",
    }
    assert kinds["azure"]["credential_format"] == "json" and kinds["azure"]["base_url"] == "required"
    assert kinds["azure"]["json_fields"] == ["api_key", "api_version"]
    assert kinds["bedrock"]["json_fields"] == [
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_region_name",
    ]
    assert "vertex_ai" not in kinds  # would sign in as the gateway host


def test_a_kind_litellm_would_call_past_the_egress_guard_is_not_listed_and_is_a_422_at_store(
    gateway: Gateway, fake_provider: FakeProvider
) -> None:
    user = gateway.user()
    listed = {e["kind"] for e in user.client.get("/providers", params={"limit": 500}).json()["data"]}
    assert "mistral" in listed and not listed & {"cohere", "replicate", "sagemaker", "watsonx", "custom"}
    refused = create(user, "cohere", "co-0123456789abcdef", None)
    assert refused.status_code == 422
    assert "outside the gateway's egress guard" in refused.json()["error"]
    assert "https://api.cohere.ai/compatibility/v1" in refused.json()["error"]  # what to use instead
    assert user.client.get("/llm-credentials").json()["data"] == []
    call = user.client.post("/v1/chat/completions", json={"model": "cohere/command-r", "messages": MESSAGES})
    assert 400 <= call.status_code < 500
    assert fake_provider.received("cohere/command-r") == fake_provider.received("command-r") == []


def test_a_catalog_entry_of_a_kind_not_offered_stops_the_start(
    make_gateway: GatewayFactory, fake_provider: FakeProvider
) -> None:
    config = default_test_config(fake_provider.base_url)
    config["models"].append({"provider": "cohere", "model": "command-r"})
    with pytest.raises(Exception, match="cohere"):
        make_gateway(config)
    config = default_test_config(fake_provider.base_url)
    config["deployment_credentials"] = [{"provider": "replicate", "api_key_env": DEPLOYMENT_ENV}]
    with pytest.raises(Exception, match=r"replicate.*is not offered"):
        make_gateway(config)


def test_a_credential_stored_before_its_kind_stopped_being_offered_is_kept_unused_and_can_be_deleted(
    make_gateway: GatewayFactory, fake_provider: FakeProvider
) -> None:
    from sqlalchemy import update

    from switchboard.credentials.models import LlmCredential

    first = make_gateway()
    owner = first.user()
    made = create(owner, "openai", "sk-kept-0123456789abcdef", fake_provider.base_url + "/v1")
    assert made.status_code == 201
    kept_id = made.json()["id"]

    async def becomes_cohere() -> None:  # as if stored while cohere was still offered
        async with first.app.state.engine.begin() as conn:
            await conn.execute(
                update(LlmCredential).where(LlmCredential.id == uuid.UUID(kept_id)).values(provider="cohere")
            )

    first.server.call_soon(becomes_cohere())
    database_url = first.app.state.settings.database_url
    first.stop()

    warnings = _Kept()
    logger = logging.getLogger("switchboard.credentials")
    logger.addHandler(warnings)
    try:
        second = make_gateway(database_url=database_url)
    finally:
        logger.removeHandler(warnings)
    [notice] = [m for m in warnings.messages if "'cohere'" in m]
    assert notice.startswith("1 stored credential(s) of provider 'cohere' are kept but never used")
    user = second.user(sub=owner.id)
    [row] = user.client.get("/llm-credentials").json()["data"]
    assert (row["id"], row["provider"]) == (kept_id, "cohere")
    patched = user.client.patch(f"/llm-credentials/{kept_id}", json={"label": "still here"})
    assert patched.status_code == 422 and "not offered" in patched.json()["error"]
    before = len(fake_provider.received())
    answer = user.client.post("/v1/chat/completions", json={"model": "default", "messages": MESSAGES})
    assert answer.json()["error"]["code"] == "no_credential"  # the kept one is not in reach
    assert len(fake_provider.received()) == before
    assert user.client.delete(f"/llm-credentials/{kept_id}").status_code == 204
    assert user.client.get("/llm-credentials").json()["data"] == []


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
