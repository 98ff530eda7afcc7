"""The Anthropic adapter against litellm's translation (SPEC §15): for every exchange of the corpus,
both paths call the fake provider, which sends the same Anthropic answer, and must send the same
provider request and give the same OpenAI answer, streamed or not, except where the corpus lists a
difference and why.

Normalised away as legitimately arbitrary: `created`, and litellm's made-up `chatcmpl-…` ids where
the adapter keeps Anthropic's message id (checked on its own). A stream is compared reassembled:
content, reasoning and tool-call arguments joined, the finish_reason, the usage chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson
import pytest

from switchboard.errors import SwitchboardError
from switchboard.upstream.adapters.anthropic import AnthropicAdapter
from switchboard.upstream.adapters.anthropic_models import traits
from switchboard.upstream.adapters.relay import AdaptedRelay
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.translated import TranslatedRelay
from switchboard.upstream.types import UpstreamTarget, Usage
from switchboard.upstream.usage_openai import openai_usage
from tests.fakes.provider import FakeProvider
from tests.upstream.adapters.anthropic_corpus import CORPUS, Exchange
from tests.upstream.conftest import KEY, TIMEOUTS, MakeTarget

Tree = dict[str, Any]


@pytest.fixture
async def paths() -> AsyncIterator[tuple[TranslatedRelay, AdaptedRelay]]:
    pool = ClientPool(TIMEOUTS)
    connections = ProviderConnections(TIMEOUTS)
    yield TranslatedRelay(pool), AdaptedRelay(connections, AnthropicAdapter())
    await pool.aclose()
    await connections.aclose()


@pytest.mark.parametrize("exchange", CORPUS, ids=[e.name for e in CORPUS])
async def test_adapter_matches_litellm(
    exchange: Exchange,
    paths: tuple[TranslatedRelay, AdaptedRelay],
    fake_provider: FakeProvider,
    target: MakeTarget,
) -> None:
    litellm_path, our_path = paths
    upstream = target("anthropic", exchange.model)
    differed: set[str] = set()
    modes = [False, True] if exchange.answer is not None or exchange.refused else [True]
    for stream in modes:
        theirs = await _run(litellm_path, upstream, exchange, stream, fake_provider, ours=False)
        mine = await _run(our_path, upstream, exchange, stream, fake_provider, ours=True)
        for path in exchange.differences:
            left, right = _take(theirs, path), _take(mine, path)
            if left != right:
                differed.add(path)
        assert mine == theirs, f"{exchange.name} ({'stream' if stream else 'whole'})"
    assert differed == set(exchange.differences), "a listed difference no longer differs"


async def _run(
    relay: TranslatedRelay | AdaptedRelay,
    upstream: UpstreamTarget,
    exchange: Exchange,
    stream: bool,
    fake_provider: FakeProvider,
    *,
    ours: bool,
) -> Tree:
    """What one path sent and answered, normalised for comparison."""
    model = exchange.model
    seen = len(fake_provider.received(model))
    if stream:
        fake_provider.enqueue(model, answer_events=exchange.stream_events())
    else:
        fake_provider.enqueue(model, answer=exchange.answer)
    body = {**exchange.request, "stream": True} if stream else exchange.request
    try:
        answer = await (
            _streamed(relay, upstream, body, ours) if stream else _whole(relay, upstream, body, ours)
        )
    finally:
        fake_provider.clear()
    received = fake_provider.received(model)[seen:]
    if exchange.refused:
        assert not received, "a refused call must not reach the provider"
        return {"answer": answer}
    [request] = received
    assert request.api_key == KEY
    beta = request.headers.get("anthropic-beta")
    headers = {
        "version": request.headers.get("anthropic-version"),
        "beta": sorted(beta.split(",")) if beta else None,
    }
    return {"request": request.body, "headers": headers, "answer": answer}


def _in_chat_terms(usage: Usage | None) -> Usage | None:
    """What a chat answer's usage can say: the cache writes the reply counts (and meters) have no
    field in OpenAI's format."""
    return replace(usage, cache_write_tokens=0, cache_write_1h_tokens=0) if usage is not None else None


async def _whole(
    relay: TranslatedRelay | AdaptedRelay, upstream: UpstreamTarget, body: Tree, ours: bool
) -> Tree:
    try:
        reply = await relay.chat(upstream, body)
    except SwitchboardError as exc:
        return {"error_status": exc.status}
    payload = orjson.loads(reply.body)
    answer_id = payload.pop("id")
    assert answer_id.startswith("msg_" if ours else "chatcmpl-")
    assert isinstance(payload.pop("created"), int)
    [choice] = payload.pop("choices")
    assert openai_usage(payload["usage"]) == _in_chat_terms(reply.usage)
    return {**payload, **choice.pop("message"), **choice}


async def _streamed(
    relay: TranslatedRelay | AdaptedRelay, upstream: UpstreamTarget, body: Tree, ours: bool
) -> Tree:
    chunks: list[Tree] = []
    flags: list[bool] = []
    try:
        stream = relay.chat_stream(upstream, body)
        async for event in stream:
            assert event.data.startswith(b"data: ") and event.data.endswith(b"\n\n")
            chunks.append(orjson.loads(event.data[6:]))
            flags.append(event.is_usage_only)
    except SwitchboardError as exc:
        # What came before a mid-stream error depends on how the bytes were cut (litellm holds
        # some back): only the error is compared.
        return {"error_status": exc.status}
    answer: Tree = {}
    ids = {chunk["id"] for chunk in chunks}
    assert len(ids) <= 1, "every chunk of a stream carries the same id"
    if ours and chunks:
        assert ids.pop().startswith("msg_")
        assert chunks[0]["choices"][0]["delta"].get("role") == "assistant"
    assert flags[-1] and not any(flags[:-1]), "one usage chunk, last"
    assert chunks[-1]["choices"] == []
    assert openai_usage(chunks[-1]["usage"]) == _in_chat_terms(stream.usage)
    answer["usage"] = chunks.pop()["usage"]
    answer.update(_reassembled(chunks))
    return answer


def _reassembled(chunks: list[Tree]) -> Tree:
    content, reasoning = "", ""
    calls: dict[int, Tree] = {}
    answer: Tree = {"object": "chat.completion.chunk"} if chunks else {}
    for chunk in chunks:
        answer["model"] = chunk["model"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], {"function": {"arguments": ""}})
                for key in ("id", "type"):
                    if call.get(key):
                        slot[key] = call[key]
                function = call.get("function") or {}
                if function.get("name"):
                    slot["function"]["name"] = function["name"]
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                answer["finish_reason"] = choice["finish_reason"]
    if content:
        answer["content"] = content
    if reasoning:
        answer["reasoning_content"] = reasoning
    if calls:
        answer["tool_calls"] = [calls[index] for index in sorted(calls)]
    return answer


def _take(tree: Any, path: str) -> Any:
    """Removes dotted `path` from `tree` (a list applies the rest to each element); returns what it held."""
    head, _, rest = path.partition(".")
    if isinstance(tree, list):
        return [_take(item, path) for item in tree]
    if not isinstance(tree, dict) or head not in tree:
        return None
    if not rest:
        return tree.pop(head)
    return _take(tree[head], rest)


MODELS = [
    "claude-3-5-haiku-latest", "claude-3-5-haiku-20241022", "claude-3-7-sonnet-20250219",
    "claude-sonnet-4-20250514", "claude-opus-4-1-20250805", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5", "claude-opus-4-5", "claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4.6",
    "claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5", "claude-fable-5-1", "claude-mythos-5",
    "claude-newfamily-9", "claude-sonnet-4-5-20991231",
]  # fmt: skip


@pytest.mark.parametrize("model", MODELS)
def test_model_traits_are_what_litellm_reads_from_its_map(model: str) -> None:
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    config = AnthropicConfig()
    capable = AnthropicConfig._supports_model_capability
    expected = {
        "max_output": AnthropicConfig.get_max_tokens_for_model(model),
        "reasoning": "reasoning_effort" in config.get_supported_openai_params(model),
        "adaptive_thinking": capable(model, "supports_adaptive_thinking", "anthropic"),
        "legacy_thinking": capable(model, "supports_legacy_thinking", "anthropic"),
        "thinking_always_on": capable(model, "thinking_always_on", "anthropic"),
        "native_json_schema": capable(model, "supports_native_structured_output", "anthropic"),
        "sampling": AnthropicConfig._supports_sampling_params(model),
        "forced_tool_use": not AnthropicConfig.forced_tool_use_unsupported(model),
        "effort_xhigh": AnthropicConfig._supports_effort_level(model, "xhigh", "anthropic"),
        "effort_max": AnthropicConfig._is_adaptive_thinking_model(model, "anthropic")
        or AnthropicConfig._supports_effort_level(model, "max", "anthropic"),
    }
    assert {name: getattr(traits(model), name) for name in expected} == expected
