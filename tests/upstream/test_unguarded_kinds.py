"""The provider kinds not offered because litellm would call them past the egress guard (SPEC §21).

Each kind of providers.UNGUARDED is called here directly through the pinned litellm, handed a client
whose transport records every request, as TranslatedRelay hands one: the test proves the client is
not what litellm sends with. When a litellm upgrade starts using it for a kind, the test fails and the
kind can be offered again (under the guard, with the long-tail tests of test_long_tail.py)."""

from __future__ import annotations

import contextlib

import httpx
import pytest

from switchboard.upstream import providers
from switchboard.upstream.guard_sync import ALLOW_PRIVATE
from switchboard.upstream.litellm_loader import litellm_module
from tests.upstream.conftest import KEY, MESSAGES
from tests.upstream.raw_server import RawProvider

# Kinds whose request litellm sends to the base_url it is given: the loopback server sees it arrive
# on a connection litellm opened itself. The others are sent to a host litellm picks (replicate,
# sagemaker, gigachat's and watsonx's sign-in) or not over HTTP at all (petals), so only the unused
# client can be seen here.
REACHES_BASE_URL = frozenset({
    "aiohttp_openai", "amazon_nova", "anthropic_text", "cloudflare", "cohere", "cohere_chat", "custom",
    "maritalk", "nlp_cloud", "oobabooga", "text-completion-codestral",
})  # fmt: skip


class Recording(httpx.AsyncBaseTransport):
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(500, json={"error": {"message": "recorded"}})


def test_no_unguarded_kind_is_offered_and_each_says_why() -> None:
    assert set(providers.UNGUARDED) <= set(providers.LITELLM_KINDS)
    for kind in providers.UNGUARDED:
        assert not providers.is_known(kind)
        with pytest.raises(ValueError, match="is not offered: litellm"):
            providers.checked_kind(kind)


def test_kinds_whose_traffic_the_test_can_see_are_all_unguarded() -> None:
    assert set(providers.UNGUARDED) >= REACHES_BASE_URL


@pytest.mark.parametrize("kind", sorted(providers.UNGUARDED))
async def test_litellm_does_not_send_an_unguarded_kinds_call_with_the_client_it_is_handed(
    kind: str,
) -> None:
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    litellm = await litellm_module()
    recording = Recording()
    raw = RawProvider(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
    token = ALLOW_PRIVATE.set(True)  # litellm's module-level clients may reach the loopback server
    try:
        async with raw.running() as base_url:
            with contextlib.suppress(Exception):
                await litellm.acompletion(
                    model=f"{kind}/some-model",
                    messages=MESSAGES,
                    api_key=KEY,
                    api_base=base_url,
                    client=AsyncHTTPHandler(transport=recording),
                    num_retries=0,
                    timeout=5,
                )
    finally:
        ALLOW_PRIVATE.reset(token)
    assert recording.requests == []
    if kind in REACHES_BASE_URL:
        assert raw.connections >= 1 or raw.requests, f"{kind}: litellm sent nothing to the base_url"
