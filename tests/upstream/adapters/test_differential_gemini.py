"""Our Gemini adapter against litellm's translation, exchange by exchange (SPEC §15 "Precise readings").

Each exchange of the corpus runs twice against the fake provider, scripted with the same raw Gemini
answer: through litellm (TranslatedRelay) and through our adapter (AdaptedRelay). Both must send the
same provider request and give the client the same OpenAI answer. Only what is legitimately
arbitrary is normalised: timestamps, generated ids (checked non-empty, distinct, and constant along
a stream), and the spelling of Gemini's field names (litellm writes snake_case, we write Gemini's
camelCase; Gemini reads both). Every other difference is listed below with the reason ours is right.
"""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from switchboard.errors import SwitchboardError
from switchboard.kit.secret import Secret
from switchboard.upstream.adapters.gemini import GeminiAdapter
from switchboard.upstream.adapters.relay import AdaptedRelay
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.pool import ClientPool
from switchboard.upstream.translated import TranslatedRelay
from switchboard.upstream.types import UpstreamTarget
from tests.fakes.gemini_wire import sse
from tests.fakes.provider import FakeProvider
from tests.upstream.adapters.gemini_corpus import CORPUS, Exchange
from tests.upstream.conftest import KEY, TIMEOUTS

Relay = TranslatedRelay | AdaptedRelay
# litellm's snake_case spellings of Gemini fields (Gemini's JSON parser reads both).
CAMEL = {
    "system_instruction": "systemInstruction",
    "function_declarations": "functionDeclarations",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "inline_data": "inlineData",
    "file_data": "fileData",
    "mime_type": "mimeType",
    "file_uri": "fileUri",
    "allowed_function_names": "allowedFunctionNames",
    "max_output_tokens": "maxOutputTokens",
    "top_p": "topP",
    "candidate_count": "candidateCount",
    "stop_sequences": "stopSequences",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "response_mime_type": "responseMimeType",
    "response_schema": "responseSchema",
    "response_json_schema": "responseJsonSchema",
    "media_resolution": "mediaResolution",
    "code_execution": "codeExecution",
    "url_context": "urlContext",
}
GENERATED_CALL_ID = re.compile(r"^call_[0-9a-f]{28}")
GENERATED_ANSWER_ID = re.compile(r"^chatcmpl-[0-9a-f-]+$")


@dataclass(frozen=True)
class Difference:
    """Where our answer rightly differs from litellm's: the path into the normalised result (an
    answer, or a stream's list of chunks) and the value ours holds there."""

    path: tuple[str | int, ...]
    ours: Any
    reason: str


# The known differences, per exchange. Each is checked: ours holds `ours` at the path, litellm does not.
KNOWN: dict[str, list[Difference]] = {
    "safety_finish": [
        Difference(
            ("answer", "id"),
            "resp-corpus-1",
            "litellm drops Gemini's responseId when it withholds a flagged answer; we keep it (SPEC: the "
            "id is the responseId whenever Gemini sends one), so the call can be found in Google's logs",
        )
    ],
    "prompt_blocked": [
        Difference(
            ("answer", "id"),
            "resp-blocked",
            "as for safety_finish: litellm makes up an id for a blocked prompt; we keep Gemini's",
        )
    ],
    "safety_finish_after_thoughts_from_a_cache": [
        Difference(("answer", "id"), "resp-corpus-1", "as for safety_finish"),
        Difference(
            ("answer", "usage"),
            {
                "prompt_tokens": 21,
                "completion_tokens": 51,
                "total_tokens": 72,
                "prompt_tokens_details": {"cached_tokens": 10},
                "completion_tokens_details": {"reasoning_tokens": 50},
            },
            "SPEC §15: completion includes the thoughts and cached tokens are reported, flagged or not; "
            "litellm's flagged-answer path counts the candidates only, so 50 billed thought tokens "
            "would go unmetered",
        ),
    ],
    "answer_without_usage": [
        Difference(
            ("answer",),
            {
                "id": "resp-nousage",
                "object": "chat.completion",
                "model": "gemini-2.5-flash",
                "system_fingerprint": None,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Hi!"},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
            },
            "an answer without usageMetadata is still an answer: the client gets it and the gateway "
            "records estimated usage (SPEC §19 'never silently zero'); litellm fails the whole call (400)",
        )
    ],
    "error_inside_a_200": [
        Difference(
            ("answer", "status"),
            502,
            "SPEC §19: a 200 whose JSON carries a top-level error is a 502; litellm fails to read it as "
            "an answer and reports a 400, which would tell the client its request was wrong",
        ),
        Difference(("answer", "error"), "api_error", "the 502's type (litellm's 400: invalid_request_error)"),
    ],
}


@dataclass(frozen=True)
class Outcome:
    path: str
    query: str
    api_key: str | None
    request: Any
    answer: Any  # the chat.completion JSON, or the stream's [(is_usage_only, chunk), ...]


@pytest.fixture(scope="module")
async def litellm_relay() -> AsyncIterator[TranslatedRelay]:
    pool = ClientPool(TIMEOUTS)
    yield TranslatedRelay(pool)
    await pool.aclose()


@pytest.fixture(scope="module")
async def our_relay() -> AsyncIterator[AdaptedRelay]:
    connections = ProviderConnections(TIMEOUTS)
    yield AdaptedRelay(connections, GeminiAdapter())
    await connections.aclose()


async def run(relay: Relay, exchange: Exchange, provider: FakeProvider) -> Outcome:
    """One exchange through `relay`: what the provider saw, and what the client got (a failure as
    `failure`, after the chunks that came before it)."""
    target = UpstreamTarget("gemini", exchange.model, Secret(KEY), provider.base_url, True)
    body = copy.deepcopy(exchange.request)  # litellm changes the body it is given (tool schemas)
    before = len(provider.received(exchange.model))
    answer: Any
    if exchange.events is not None:
        provider.enqueue(exchange.model, answer_events=[sse(event) for event in exchange.events])
        answer = []
        try:
            async for event in relay.chat_stream(target, body):
                answer.append((event.is_usage_only, orjson.loads(event.data[6:])))
        except SwitchboardError as error:
            answer.append((False, failure(error)))
    else:
        if exchange.answer is not None:
            provider.enqueue(exchange.model, answer=exchange.answer)
        try:
            answer = orjson.loads((await relay.chat(target, body)).body)
        except SwitchboardError as error:
            answer = failure(error)
    seen = provider.received(exchange.model)[before:]
    if not seen:
        return Outcome("", "", None, None, answer)
    return Outcome(seen[-1].path, seen[-1].query, seen[-1].api_key, camel(seen[-1].body), answer)


def failure(error: SwitchboardError) -> dict[str, Any]:
    """What the client sees of a failure on /v1: the status and OpenAI's error type. (We refuse with
    BadRequest, as the adapter contract says, where litellm's refusal arrives as UpstreamBadRequest:
    both are a 400 `invalid_request_error`.)"""
    return {"error": error.openai_type, "status": error.status}


def camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {CAMEL.get(key, key): camel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [camel(item) for item in value]
    return value


def normalised(outcome: Outcome, exchange: Exchange) -> dict[str, Any]:
    """The answer with timestamps dropped and generated ids replaced, once checked."""
    answers = [chunk for _, chunk in outcome.answer] if exchange.stream else [outcome.answer]
    chunks = [chunk for chunk in answers if "error" not in chunk]
    ids = {chunk["id"] for chunk in chunks}
    assert len(ids) <= 1, f"one id along the stream, got {ids}"
    first = exchange.events[0] if exchange.events else exchange.answer or {}
    sent_id = first.get("responseId")
    calls = [
        call["id"]
        for chunk in chunks
        for choice in chunk["choices"]
        for call in (choice.get("message") or choice.get("delta") or {}).get("tool_calls") or []
    ]
    assert all(calls) and len(set(calls)) == len(calls), f"tool call ids non-empty and distinct: {calls}"
    for chunk in chunks:
        del chunk["created"]
        if sent_id is None:
            assert GENERATED_ANSWER_ID.match(chunk["id"]), chunk["id"]
            chunk["id"] = "<generated>"
        for choice in chunk["choices"]:
            for call in (choice.get("message") or choice.get("delta") or {}).get("tool_calls") or []:
                call["id"] = GENERATED_CALL_ID.sub("call_<generated>", call["id"])
    return {"answer": outcome.answer}


def pop(tree: Any, path: tuple[str | int, ...]) -> Any:
    for step in path[:-1]:
        tree = tree[step]
    return tree.pop(path[-1]) if isinstance(tree, dict) else tree[path[-1]]


@pytest.mark.parametrize("exchange", CORPUS, ids=[exchange.name for exchange in CORPUS])
async def test_our_adapter_sends_and_answers_what_litellm_does(
    exchange: Exchange, fake_provider: FakeProvider, litellm_relay: TranslatedRelay, our_relay: AdaptedRelay
) -> None:
    theirs = await run(litellm_relay, exchange, fake_provider)
    ours = await run(our_relay, exchange, fake_provider)
    assert (ours.request is not None) == exchange.reaches_the_provider

    assert (ours.path, ours.query, ours.api_key) == (theirs.path, theirs.query, theirs.api_key)
    assert ours.request == theirs.request

    mine, litellm = normalised(ours, exchange), normalised(theirs, exchange)
    for difference in KNOWN.get(exchange.name, []):
        assert pop(mine, difference.path) == difference.ours
        assert pop(litellm, difference.path) != difference.ours, f"litellm now agrees: {difference.path}"
    assert mine == litellm


def test_every_listed_difference_names_an_exchange_of_the_corpus() -> None:
    assert set(KNOWN) <= {exchange.name for exchange in CORPUS}
    assert len(CORPUS) >= 16
