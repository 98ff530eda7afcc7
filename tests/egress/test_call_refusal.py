"""At call time the guard's refusal is 502 `upstream_forbidden` (SPEC §21); nothing reaches the address."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import openai
import pytest

from tests.conftest import GatewayFactory, default_test_config
from tests.fakes.provider import FakeProvider
from tests.support.gateway import Gateway
from tests.support.recorder import RECORDER

KEY_ENV = f"SWITCHBOARD_TEST_EGRESS_{uuid.uuid4().hex[:8].upper()}"


@pytest.fixture(scope="module")
def strict_with_inside_deployment_key(
    make_gateway: GatewayFactory, fake_provider: FakeProvider
) -> Iterator[Gateway]:
    """The operator's deployment key points at a loopback address on a gateway that refuses them."""
    config = default_test_config(fake_provider.base_url)
    config["deployment_credentials"] = [
        {"provider": "openai", "api_key_env": KEY_ENV, "base_url": f"{fake_provider.base_url}/v1"}
    ]
    os.environ[KEY_ENV] = RECORDER.remember_secret(f"sk-egress-{uuid.uuid4().hex}")
    yield make_gateway(config, env={"SWITCHBOARD_ALLOW_PRIVATE_UPSTREAMS": "false"})
    del os.environ[KEY_ENV]


def test_a_call_to_a_forbidden_address_is_a_502_upstream_forbidden(
    strict_with_inside_deployment_key: Gateway, fake_provider: FakeProvider
) -> None:
    gateway = strict_with_inside_deployment_key
    model = f"gpt-{uuid.uuid4().hex[:8]}"
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=gateway.user().token, max_retries=0, timeout=20)
    with sdk, pytest.raises(openai.APIStatusError) as raised:
        sdk.chat.completions.create(model=f"openai/{model}", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 502
    assert raised.value.code == "upstream_forbidden"
    assert "loopback" in raised.value.message
    assert fake_provider.received(model) == []
