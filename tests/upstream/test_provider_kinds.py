"""The provider kinds GET /providers lists are the kinds a chat call reaches through the pinned litellm
(SPEC §15); litellm's own refusals reach callers in the gateway's words (SPEC §3)."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.errors import BadRequest, SwitchboardError
from switchboard.upstream import providers
from switchboard.upstream.client import UpstreamClient
from switchboard.upstream.service import list_providers
from switchboard.upstream.translated import TranslatedRelay
from switchboard.upstream.types import UpstreamTarget
from tests.conftest import GatewayFactory, default_test_config
from tests.fakes.provider import FakeProvider
from tests.upstream.conftest import MESSAGES, unique
from tests.upstream.test_long_tail import _secret_for

BODY = {"messages": MESSAGES}  # no output cap: some routed kinds refuse max_tokens (a clear 400, below)
LITELLM_WORDS = ("litellm", "drop_params", "Unmapped", "custom_llm_provider", "UnsupportedParams")


def _listed_long_tail() -> list[str]:
    page = list_providers(None, 500, allow_private=True)
    return [p.kind for p in page.data if not providers.is_native(p.kind)]


def _target(fake: FakeProvider, kind: str) -> UpstreamTarget:
    base = fake.base_url if kind in providers.NEEDS_BASE_URL else fake.base_url + "/v1"
    return UpstreamTarget(kind, unique("probe"), _secret_for(kind), base, allow_private=True)


def _assert_in_gateway_words(error: SwitchboardError, kind: str) -> None:
    said = error.message.replace(kind, "<kind>")  # a kind may be called litellm_…
    assert not any(word in said for word in LITELLM_WORDS), error.message


async def test_every_listed_kind_is_routed_by_the_pinned_litellm(
    upstream: UpstreamClient, fake_provider: FakeProvider
) -> None:
    """Each listed kind's call is answered, or fails for a reason of its own (the fake does not speak
    its format, it needs settings of its provider's), never because litellm has no route for it."""
    listed = _listed_long_tail()
    assert len(listed) > 100 and not set(listed) & providers.NO_CHAT_ROUTE
    unrouted = []
    for kind in listed:
        try:
            await upstream.chat(_target(fake_provider, kind), BODY)
        except SwitchboardError as error:
            _assert_in_gateway_words(error, kind)
            if error.openai_code == "unsupported_provider":
                unrouted.append(kind)
    assert unrouted == []


async def test_the_kinds_left_out_are_those_the_pinned_litellm_cannot_call(
    upstream: UpstreamClient, fake_provider: FakeProvider
) -> None:
    """Straight to the litellm relay (the client refuses these kinds before it): each fails before
    anything is sent. When a litellm upgrade gives one a route, this fails: list it again."""
    relay = TranslatedRelay(upstream.pool)
    for kind in sorted(providers.NO_CHAT_ROUTE):
        target = _target(fake_provider, kind)
        with pytest.raises(BadRequest) as raised:
            await relay.chat(target, BODY)
        _assert_in_gateway_words(raised.value, kind)
        assert raised.value.openai_code in ("unsupported_provider", "unsupported_parameter"), kind
        assert fake_provider.received(target.model) == [], kind
    assert set(providers.LITELLM_KINDS) >= providers.NO_CHAT_ROUTE


def test_providers_lists_and_the_store_accepts_only_callable_kinds(
    make_gateway: GatewayFactory, fake_provider: FakeProvider
) -> None:
    gateway = make_gateway(config=default_test_config(fake_provider.base_url))
    user = gateway.user()
    kinds: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        page = user.client.get("/providers", params=params).json()
        kinds += [p["kind"] for p in page["data"]]
        if not (cursor := page["next_cursor"]):
            break
    assert "openai_like" not in kinds and "voyage" not in kinds and "groq" in kinds
    refused = user.client.post(
        "/llm-credentials", json={"provider": "openai_like", "secret": "sk-some-key-1234567890"}
    )
    assert refused.status_code == 400
    assert "openai_like" in refused.json()["error"]
    assert user.client.get("/llm-credentials").json()["data"] == []


def test_a_parameter_litellm_refuses_is_a_400_in_the_gateways_words(
    make_gateway: GatewayFactory, fake_provider: FakeProvider
) -> None:
    config = default_test_config(fake_provider.base_url)
    gateway = make_gateway(config=config)
    user = gateway.user()
    body = {
        "provider": "v0",
        "secret": "sk-v0-key-1234567890abcdef",
        "base_url": fake_provider.base_url + "/v1",
    }
    assert user.client.post("/llm-credentials", json=body).status_code == 201
    model = unique("v0-model")
    call = {"model": f"v0/{model}", "messages": MESSAGES, "max_tokens": 20}
    answer = user.client.post("/v1/chat/completions", json=call)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["message"] == "v0 does not accept the parameter(s) max_tokens; leave them out"
    assert (error["param"], error["code"]) == ("max_tokens", "unsupported_parameter")
    assert fake_provider.received(model) == []
    del call["max_tokens"]
    assert user.client.post("/v1/chat/completions", json=call).status_code == 200
