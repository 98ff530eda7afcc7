"""A standard client signs in with an API key: the `openai` SDK's `api_key` is a Switchboard key."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import openai
import pytest

from tests.auth.conftest import issue_key
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER


def sdk(gateway: Gateway, api_key: str) -> openai.OpenAI:
    # The SDK's responses go through the leak recorder like every other client's.
    http = httpx.Client(event_hooks={"response": [RECORDER.record]}, timeout=30.0)
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=api_key, max_retries=0, http_client=http)


def test_the_openai_sdk_works_with_an_api_key_until_revoked(gateway: Gateway, fake_provider: Any) -> None:
    owner = gateway.user()
    issued = issue_key(gateway, owner.token)
    key = issued["api_key"]
    # The key is the bearer on other domains' routes too: it stores the provider credential.
    provider_key = RECORDER.remember_secret(f"sk-openai-{uuid.uuid4().hex}")
    stored = gateway.client(key).post(
        "/llm-credentials",
        json={"provider": "openai", "secret": provider_key, "base_url": f"{fake_provider.base_url}/v1"},
    )
    assert stored.status_code == 201, stored.text
    client = sdk(gateway, key)

    assert "openai/gpt-4o-mini" in [model.id for model in client.models.list()]
    model = f"m-{uuid.uuid4().hex[:10]}"
    fake_provider.script(model, reply="Hello from the fake.")
    completion = client.chat.completions.create(
        model=f"openai/{model}", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "Hello from the fake."
    (seen,) = fake_provider.received(model)
    assert seen.api_key == provider_key  # the provider sees the stored credential, never our key

    assert owner.client.post(f"/auth/api-keys/{issued['id']}/revoke").status_code == 200
    with pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    assert refused.value.status_code == 401


def test_the_openai_sdk_is_refused_with_a_key_we_never_issued(gateway: Gateway) -> None:
    with pytest.raises(openai.AuthenticationError) as refused:
        sdk(gateway, "svc_api_" + "0" * 49).models.list()
    assert refused.value.code == "invalid_api_key"
