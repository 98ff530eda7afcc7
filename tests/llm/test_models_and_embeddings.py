"""GET /v1/models lists what the caller can use; embeddings relay like completions."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.llm.conftest import add_credential, provider_base, unique_model
from tests.support.gateway import Gateway


def test_models_list_shows_only_what_the_callers_credentials_reach(
    gateway: Gateway, fake_provider: Any
) -> None:
    user = gateway.user()
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0)
    assert [m.id for m in sdk.models.list()] == []
    add_credential(user, "anthropic", provider_base(fake_provider, "anthropic"))
    ids = [m.id for m in sdk.models.list()]
    assert "anthropic/claude-3-5-haiku-latest" in ids
    assert "claude" in ids and "default" in ids and "tag:fast" in ids
    assert "openai/gpt-4o-mini" not in ids and "tag:cheap" not in ids


def test_a_single_model_can_be_retrieved_and_unknown_is_404(gateway: Gateway, fake_provider: Any) -> None:
    user = gateway.user()
    add_credential(user, "openai", provider_base(fake_provider, "openai"))
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0)
    assert sdk.models.retrieve("openai/gpt-4o-mini").id == "openai/gpt-4o-mini"
    assert sdk.models.retrieve("fast").id == "fast"
    assert sdk.models.retrieve("openai/not-in-catalog").owned_by == "openai"
    with pytest.raises(openai.NotFoundError):
        sdk.models.retrieve("anthropic/claude-3-5-haiku-latest")


def test_embeddings_relay_through_the_sdk(gateway: Gateway, fake_provider: Any) -> None:
    user = gateway.user()
    _, credential_id = add_credential(user, "openai", provider_base(fake_provider, "openai"))
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=user.token, max_retries=0)
    model = unique_model("embed")
    raw = sdk.embeddings.with_raw_response.create(model=f"openai/{model}", input=["a", "b"])
    result = raw.parse()
    assert len(result.data) == 2 and result.data[0].embedding
    assert raw.headers["x-switchboard-credential"] == credential_id
    assert fake_provider.received(model)[0].body["input"] == ["a", "b"]


def test_embeddings_without_input_is_a_bad_request(gateway: Gateway) -> None:
    user = gateway.user()
    response = user.client.post("/v1/embeddings", json={"model": "default"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "input"
