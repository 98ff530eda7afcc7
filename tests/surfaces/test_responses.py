"""POST /v1/responses through a real gateway with the openai SDK, on every provider kind (SPEC §16):
relayed to `openai`, translated over chat for `anthropic`, `gemini` and a long-tail kind."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import orjson
import pytest
from pydantic import BaseModel

from tests.fakes import anthropic_wire
from tests.fakes.provider import FakeProvider
from tests.llm.conftest import Caller, unique_model
from tests.surfaces.conftest import KINDS, PATHS, STREAM_PATHS, TRANSLATED
from tests.surfaces.responses_sse import check_grammar, parse, types

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]


def records(caller: Caller) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = caller.user.client.get("/usage/me", params={"limit": 500}).json()["data"]
    return data


def seen(fake_provider: FakeProvider, model: str) -> Any:
    [request] = fake_provider.received(model)
    return request


@pytest.mark.parametrize("kind", KINDS)
def test_create_answers_a_response_object_metered_as_responses(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"r-{kind}")
    fake_provider.script(model, reply="Bonjour.", prompt_tokens=21, completion_tokens=3)
    raw = caller.sdk.responses.with_raw_response.create(
        model=f"{kind}/{model}", input="hi", instructions="Be brief."
    )
    response = raw.parse()
    assert response.object == "response" and response.status == "completed"
    assert response.output_text == "Bonjour."
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 3)
    assert raw.headers["x-switchboard-model"] == f"{kind}/{model}"
    assert raw.headers["x-switchboard-credential"] == caller.credential_ids[kind]
    request = seen(fake_provider, model)
    assert request.path.endswith(PATHS[kind])
    assert request.api_key == caller.keys[kind]
    assert "Be brief." in orjson.dumps(request.body).decode()  # instructions reached the provider
    [record] = [r for r in records(caller) if r["model"] == model]
    assert (record["endpoint"], record["status"], record["provider"]) == ("responses", "ok", kind)
    assert (record["prompt_tokens"], record["completion_tokens"]) == (21, 3)


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_follows_the_responses_grammar_and_ends_with_the_usage(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"s-{kind}")
    fake_provider.script(model, reply="one two three four", prompt_tokens=5, completion_tokens=9)
    with caller.user.client.stream(
        "POST", "/v1/responses", json={"model": f"{kind}/{model}", "input": "count", "stream": True}
    ) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        data = b"".join(answer.iter_bytes())
    assert b"[DONE]" not in data
    events = parse(data)
    check_grammar(events, relayed=kind == "openai")
    assert events[-1]["type"] == "response.completed"
    names = types(events)
    for name in ("response.output_item.added", "response.content_part.added", "response.output_item.done"):
        assert name in names
    assert names.index("response.content_part.added") < names.index("response.output_text.delta")
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "one two three four"
    usage = events[-1]["response"]["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    if kind != "mistral":  # litellm counts a mistral stream itself: the fake's count never reaches it
        assert (usage["input_tokens"], usage["output_tokens"]) == (5, 9)
    assert seen(fake_provider, model).path.endswith(STREAM_PATHS[kind])
    [record] = [r for r in records(caller) if r["model"] == model]
    assert (record["endpoint"], record["status"]) == ("responses", "ok")
    # The client is told what is metered.
    assert (record["prompt_tokens"], record["completion_tokens"]) == (
        usage["input_tokens"],
        usage["output_tokens"],
    )


@pytest.mark.parametrize("kind", KINDS)
def test_the_sdks_stream_helper_accumulates_the_answer(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"h-{kind}")
    fake_provider.script(model, reply="Streams accumulate nicely.")
    deltas: list[str] = []
    with caller.sdk.responses.stream(model=f"{kind}/{model}", input="go") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.snapshot)
        final = stream.get_final_response()
    assert final.output_text == "Streams accumulate nicely."
    assert deltas[-1] == "Streams accumulate nicely."  # the helper's running snapshot


@pytest.mark.parametrize("kind", KINDS)
def test_a_function_tool_round_trip(kind: str, caller: Caller, fake_provider: FakeProvider) -> None:
    model = unique_model(f"t-{kind}")
    fake_provider.script(model, tool_arguments='{"location": "Paris"}', reply="Sunny in Paris.")
    first = caller.sdk.responses.create(model=f"{kind}/{model}", input="Weather in Paris?", tools=TOOLS)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.name, orjson.loads(call.arguments)) == ("get_weather", {"location": "Paris"})
    assert call.call_id
    if kind == "anthropic":  # a tool_use in the history makes the adapter declare a tool: answer text
        fake_provider.enqueue(model, answer=anthropic_wire.message([anthropic_wire.text("Sunny in Paris.")]))
    second = caller.sdk.responses.create(
        model=f"{kind}/{model}",
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            *[item.model_dump(exclude_none=True) for item in first.output],  # type: ignore[misc]
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 24 C"},
        ],
    )
    assert second.output_text == "Sunny in Paris."
    sent = orjson.dumps(fake_provider.received(model)[1].body).decode()
    assert "sunny, 24 C" in sent and "get_weather" in sent
    if kind != "gemini":  # Gemini matches a result to its call by name, not by id
        assert call.call_id in sent


@pytest.mark.parametrize("kind", KINDS)
def test_a_streamed_tool_call_accumulates_its_arguments(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"st-{kind}")
    fake_provider.script(model, tool_arguments='{"location": "Rome"}')
    with caller.sdk.responses.stream(model=f"{kind}/{model}", input="Rome?", tools=TOOLS) as stream:
        final = stream.get_final_response()
    [call] = [item for item in final.output if item.type == "function_call"]
    assert (call.name, orjson.loads(call.arguments)) == ("get_weather", {"location": "Rome"})
    assert call.parsed_arguments == {"location": "Rome"}  # strict tools are parsed by the helper


class City(BaseModel):
    city: str
    population: int


@pytest.mark.parametrize("kind", KINDS)
def test_a_json_schema_via_text_format(kind: str, caller: Caller, fake_provider: FakeProvider) -> None:
    model = unique_model(f"j-{kind}")
    answer = '{"city": "Paris", "population": 2100000}'
    # Anthropic may be asked through a forced tool, whose input then comes back as the text.
    fake_provider.script(model, reply=answer, tool_arguments=answer)
    parsed = caller.sdk.responses.parse(
        model=f"{kind}/{model}", input="Largest French city?", text_format=City
    )
    assert parsed.output_parsed == City(city="Paris", population=2100000)
    sent = orjson.dumps(seen(fake_provider, model).body).decode()
    assert "population" in sent  # the schema reached the provider in its own terms


@pytest.mark.parametrize("kind", TRANSLATED)
@pytest.mark.parametrize(
    ("field", "value"),
    [("previous_response_id", "resp_earlier"), ("store", True), ("conversation", "conv_1")],
)
def test_stored_state_is_refused_where_the_call_is_translated(
    kind: str, field: str, value: Any, caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model(f"st-{kind}")
    with pytest.raises(openai.BadRequestError) as refused:
        caller.sdk.responses.create(model=f"{kind}/{model}", input="hi", **{field: value})
    error = refused.value
    assert (error.code, error.param) == ("unsupported_parameter", field)
    assert "keeps no state" in error.message
    assert fake_provider.received(model) == []


def test_stored_state_passes_through_to_openai(caller: Caller, fake_provider: FakeProvider) -> None:
    model = unique_model("st-openai")
    caller.sdk.responses.create(
        model=f"openai/{model}", input="and then?", previous_response_id="resp_earlier", store=True
    )
    body = seen(fake_provider, model).body
    assert (body["previous_response_id"], body["store"], body["model"]) == ("resp_earlier", True, model)


@pytest.mark.parametrize("kind", TRANSLATED)
def test_store_false_is_accepted_and_the_answer_says_nothing_was_stored(
    kind: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    response = caller.sdk.responses.create(model=f"{kind}/{unique_model()}", input="hi", store=False)
    assert response.store is False and response.status == "completed"


def test_an_answer_cut_by_max_output_tokens_is_incomplete(
    caller: Caller, fake_provider: FakeProvider
) -> None:
    model = unique_model("cut")
    cut = {
        "id": "chatcmpl-cut",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Once upon"}, "finish_reason": "length"}
        ],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
    }
    fake_provider.script(model, answer=cut)
    response = caller.sdk.responses.create(model=f"mistral/{model}", input="A story", max_output_tokens=2)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "Once upon"
    assert seen(fake_provider, model).body["max_tokens"] == 2


@pytest.mark.parametrize(
    ("kind", "model"),
    [("anthropic", "claude-sonnet-4-5-20250929"), ("gemini", "gemini-2.5-flash")],  # models that think
)
def test_reasoning_effort_reaches_the_provider_as_its_thinking_setting(
    kind: str, model: str, caller: Caller, fake_provider: FakeProvider
) -> None:
    before = len(fake_provider.received(model))
    caller.sdk.responses.create(
        model=f"{kind}/{model}", input="Think first.", reasoning={"effort": "low"}, max_output_tokens=4000
    )
    body = fake_provider.received(model)[before].body
    if kind == "anthropic":
        assert body["thinking"]["type"] in ("enabled", "adaptive")
    else:
        assert body["generationConfig"]["thinkingConfig"]


def test_a_malformed_body_is_a_400_in_the_openai_shape(caller: Caller) -> None:
    answer = caller.user.client.post("/v1/responses", content=b"{not json")
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"
    answer = caller.user.client.post(
        "/v1/responses", json={"model": "openai/x", "input": "hi", "stream": "yes"}
    )
    assert (answer.status_code, answer.json()["error"]["param"]) == (400, "stream")


def test_the_route_is_documented_and_needs_a_token(caller: Caller) -> None:
    spec = caller.user.client.get("/openapi.json").json()
    assert spec["paths"]["/v1/responses"]["post"]["operationId"] == "createResponse_LLM"
    anonymous = httpx.post(f"{caller.sdk.base_url}responses", json={"model": "openai/x", "input": "hi"})
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["type"] == "authentication_error"
