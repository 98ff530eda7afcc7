"""The Gemini adapter's rules (SPEC §15): OpenAI chat in, generateContent out, and back."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from switchboard.errors import BadRequest, RateLimited, UpstreamFailed
from switchboard.kit.secret import Secret
from switchboard.upstream.adapters.gemini import GeminiAdapter
from switchboard.upstream.adapters.gemini_stream import GeminiStreamMapper
from switchboard.upstream.adapters.relay import AdaptedRelay
from switchboard.upstream.connection_pool import ProviderConnections
from switchboard.upstream.types import StreamEvent, UpstreamTarget, Usage
from tests.fakes.gemini_wire import call_part, response, text_part, usage_metadata
from tests.fakes.provider import FakeProvider
from tests.upstream.adapters.gemini_corpus import PNG, SCHEMA, TIME, WEATHER
from tests.upstream.conftest import KEY, TIMEOUTS, unique

FLASH = "gemini-2.5-flash"
GEMINI_3 = "gemini-3-pro-preview"
ADAPTER = GeminiAdapter()


def request(body: dict[str, Any], model: str = FLASH) -> dict[str, Any]:
    return orjson.loads(ADAPTER.chat_request(model, body, stream=False).body)  # type: ignore[no-any-return]


def hello(**params: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "Hello"}], **params}


def config(model: str = FLASH, **params: Any) -> dict[str, Any]:
    return request(hello(**params), model).get("generationConfig", {})  # type: ignore[no-any-return]


def reply(answer: dict[str, Any], model: str = FLASH) -> tuple[Usage | None, dict[str, Any]]:
    usage, body = ADAPTER.chat_reply(orjson.dumps(answer), model)
    return usage, orjson.loads(body)


def message(answer: dict[str, Any]) -> dict[str, Any]:
    return reply(answer)[1]["choices"][0]  # type: ignore[no-any-return]


def stream(events: list[dict[str, Any]], model: str = FLASH) -> tuple[GeminiStreamMapper, list[StreamEvent]]:
    mapper = ADAPTER.stream_mapper(model)
    out = [event for payload in events for event in mapper.event(orjson.dumps(payload))]
    return mapper, out + mapper.end()


def chunks(events: list[StreamEvent]) -> list[dict[str, Any]]:
    return [orjson.loads(event.data.removeprefix(b"data: ")) for event in events]


def deltas(events: list[StreamEvent]) -> list[tuple[dict[str, Any], str | None]]:
    return [
        (c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in chunks(events) if c["choices"]
    ]


# --- the request ------------------------------------------------------------------------------


def test_the_path_names_the_model_and_streams_ask_for_sse() -> None:
    assert (
        ADAPTER.chat_request(FLASH, hello(), stream=False).path == f"/v1beta/models/{FLASH}:generateContent"
    )
    streamed = ADAPTER.chat_request(FLASH, hello(), stream=True)
    assert streamed.path == f"/v1beta/models/{FLASH}:streamGenerateContent?alt=sse"
    assert (ADAPTER.kind, ADAPTER.auth_header) == ("gemini", "x-goog-api-key")
    assert ADAPTER.default_base_url == "https://generativelanguage.googleapis.com"


def test_system_and_developer_messages_become_the_system_instruction() -> None:
    sent = request(
        {
            "messages": [
                {"role": "system", "content": "Be terse."},
                {
                    "role": "developer",
                    "content": [{"type": "text", "text": "In "}, {"type": "text", "text": "French."}],
                },
                {"role": "user", "content": "Hi"},
            ]
        }
    )
    assert sent["systemInstruction"] == {"parts": [{"text": "Be terse."}, {"text": "In French."}]}
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_a_system_prompt_alone_gets_a_placeholder_user_turn() -> None:
    sent = request({"messages": [{"role": "system", "content": "Be terse."}]})
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "."}]}]


def test_gemma_2_and_3_take_the_system_prompt_as_user_text() -> None:
    sent = request(
        {"messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}]},
        "gemma-3-27b-it",
    )
    assert "systemInstruction" not in sent
    assert sent["contents"] == [{"role": "user", "parts": [{"text": "Be terse."}, {"text": "Hi"}]}]


def test_assistant_is_model_and_consecutive_messages_of_one_role_share_a_turn() -> None:
    sent = request(
        {
            "messages": [
                {"role": "user", "content": "Hi"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "there"}, {"type": "text", "text": ""}],
                },
                {"role": "assistant", "content": "Hello."},
                {"role": "assistant", "content": [{"type": "text", "text": "Ask."}]},
            ]
        }
    )
    assert sent["contents"] == [
        {"role": "user", "parts": [{"text": "Hi"}, {"text": "there"}]},
        {"role": "model", "parts": [{"text": "Hello."}, {"text": "Ask."}]},
    ]


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(BadRequest):
        request({"messages": [{"role": "narrator", "content": "Once"}]})


def test_a_data_url_image_is_sent_inline_and_a_user_turn_without_text_gets_a_blank_one() -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    sent = request({"messages": [{"role": "user", "content": [image]}]})
    assert sent["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"text": " "},
    ]


def test_a_web_image_is_passed_by_uri_for_gemini_to_fetch_never_fetched_by_the_gateway() -> None:
    def part(url: str) -> dict[str, Any]:
        content = [{"type": "text", "text": "?"}, {"type": "image_url", "image_url": url}]
        return request({"messages": [{"role": "user", "content": content}]})["contents"][0]["parts"][1]  # type: ignore[no-any-return]

    assert part("https://example.com/cat.JPG?sig=1") == {
        "fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.JPG?sig=1"}
    }
    assert part("https://example.com/cat") == {"fileData": {"fileUri": "https://example.com/cat"}}
    with pytest.raises(BadRequest):
        part("gs://bucket/no-extension")
    with pytest.raises(BadRequest):
        part("ftp://example.com/cat.png")


def test_image_detail_is_one_media_resolution_on_gemini_2_and_per_part_on_gemini_3() -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "high"}}
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "?"}, image]}]}
    assert request(body, "gemini-2.0-flash")["generationConfig"]["mediaResolution"] == "MEDIA_RESOLUTION_HIGH"
    assert request(body, GEMINI_3)["contents"][0]["parts"][1]["mediaResolution"] == {
        "level": "MEDIA_RESOLUTION_HIGH"
    }


def _calls(*calls: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in calls
        ],
    }


def test_tool_calls_become_function_calls_and_results_function_responses_named_after_their_call() -> None:
    sent = request(
        {
            "messages": [
                {"role": "user", "content": "Weather and time?"},
                _calls(("a", "get_weather", '{"location": "Rome"}'), ("b", "get_time", "")),
                {"role": "tool", "tool_call_id": "a", "content": '{"temp_c": 21}'},
                {"role": "tool", "tool_call_id": "b", "content": "14:05"},
                {"role": "user", "content": "Thanks"},
            ]
        }
    )
    assert sent["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": {"location": "Rome"}}},
                {
                    "functionCall": {"name": "get_time", "args": {"type": "object"}}
                },  # litellm's "no arguments"
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"temp_c": 21}}},
                {"functionResponse": {"name": "get_time", "response": {"content": "14:05"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]


def test_a_tool_result_without_its_call_or_a_call_without_json_arguments_is_refused() -> None:
    with pytest.raises(BadRequest):
        request(
            {
                "messages": [
                    {"role": "user", "content": "?"},
                    {"role": "tool", "tool_call_id": "x", "content": "1"},
                ]
            }
        )
    with pytest.raises(BadRequest):
        request({"messages": [{"role": "user", "content": "?"}, _calls(("a", "f", "{not json"))]})


def test_gemini_3_gets_call_ids_and_thought_signatures_back() -> None:
    sent = request(
        {
            "messages": [
                {"role": "user", "content": "?"},
                _calls(("call_1__thought__SIG", "get_weather", "{}"), ("call_2", "get_time", "{}")),
                {"role": "tool", "tool_call_id": "call_1__thought__SIG", "content": "sunny"},
                _calls(("call_3", "get_time", "{}")),
            ]
        },
        GEMINI_3,
    )
    first, second = sent["contents"][1]["parts"]
    assert first == {
        "functionCall": {"name": "get_weather", "args": {}, "id": "call_1"},
        "thoughtSignature": "SIG",
    }
    assert second == {"functionCall": {"name": "get_time", "args": {}, "id": "call_2"}}
    assert sent["contents"][2]["parts"][0]["functionResponse"]["id"] == "call_1"
    # An unsigned first call (from another model's turn) gets Gemini's placeholder signature.
    assert (
        sent["contents"][3]["parts"][0]["thoughtSignature"] == "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="
    )


def test_sampling_parameters_go_to_the_generation_config() -> None:
    assert config(max_tokens=5, temperature=0.2, top_p=0.9, stop="END", n=2, seed=7) == {
        "maxOutputTokens": 5,
        "temperature": 0.2,
        "topP": 0.9,
        "stopSequences": ["END"],
        "candidateCount": 2,
        "seed": 7,
    }
    assert config(max_completion_tokens=9, presence_penalty=0.5, frequency_penalty=0.1) == {
        "maxOutputTokens": 9,
        "presencePenalty": 0.5,
        "frequencyPenalty": 0.1,
    }


def test_gemini_3_drops_penalties_and_gets_temperature_1_unless_asked() -> None:
    assert config(GEMINI_3, presence_penalty=0.5) == {"temperature": 1.0}
    assert config(GEMINI_3, temperature=0.3) == {"temperature": 0.3}


def test_json_mode_and_json_schema_by_model_generation() -> None:
    assert config(response_format={"type": "json_object"}) == {"responseMimeType": "application/json"}
    schema_format = {"type": "json_schema", "json_schema": {"name": "p", "strict": True, "schema": SCHEMA}}
    assert config(response_format=schema_format) == {
        "responseMimeType": "application/json",
        "responseJsonSchema": SCHEMA,
    }
    older = config("gemini-exp-1206", response_format=schema_format)["responseSchema"]
    assert "additionalProperties" not in older
    assert older["propertyOrdering"] == ["name", "age", "pets"]
    assert older["properties"]["pets"]["items"]["propertyOrdering"] == ["kind"]


def test_reasoning_effort_is_a_thinking_budget_on_gemini_2_5_and_a_thinking_level_on_gemini_3() -> None:
    assert config(reasoning_effort="high")["thinkingConfig"] == {
        "thinkingBudget": 4096,
        "includeThoughts": True,
    }
    assert config(reasoning_effort="minimal")["thinkingConfig"] == {
        "thinkingBudget": 1,
        "includeThoughts": True,
    }
    assert config(reasoning_effort="none")["thinkingConfig"] == {
        "thinkingBudget": 0,
        "includeThoughts": False,
    }
    assert config(GEMINI_3, reasoning_effort="medium")["thinkingConfig"] == {
        "thinkingLevel": "medium",
        "includeThoughts": True,
    }
    assert (
        config("gemini-3-flash-preview", reasoning_effort="minimal")["thinkingConfig"]["thinkingLevel"]
        == "minimal"
    )


def test_reasoning_is_refused_on_a_model_without_it_or_at_an_unknown_effort() -> None:
    with pytest.raises(BadRequest):
        request(hello(reasoning_effort="low"), "gemini-2.0-flash")
    with pytest.raises(BadRequest):
        request(hello(reasoning_effort="extreme"))


def test_tool_schemas_are_cleaned_into_gemini_openapi_subset() -> None:
    [tool] = request(hello(tools=[WEATHER]))["tools"]
    [declaration] = tool["functionDeclarations"]
    assert declaration["name"] == "get_weather" and declaration["description"] == "Weather in a city"
    properties = declaration["parameters"]["properties"]
    assert "additionalProperties" not in declaration["parameters"] and "strict" not in declaration
    assert properties["location"] == {"type": "string", "description": "City"}  # unsupported format dropped
    assert properties["unit"] == {"anyOf": [{"type": "string", "enum": ["c", "f", ""], "nullable": True}]}
    assert properties["days"] == {
        "anyOf": [{"type": "integer", "description": "How many"}, {"type": "null", "description": "How many"}]
    }  # a type list becomes anyOf, and the enum on integers goes
    assert properties["place"]["properties"]["lat"] == {"type": "number", "minimum": -90}  # $ref inlined
    assert properties["tags"] == {"type": "array", "items": {"type": "object"}}
    assert properties["extra"] == {"type": "object"}


def test_a_property_named_strict_survives_the_cleaning() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"strict": {"type": "boolean"}}},
        },
    }
    [declared] = request(hello(tools=[tool]))["tools"][0]["functionDeclarations"]
    assert declared["parameters"]["properties"] == {"strict": {"type": "boolean"}}


def test_tool_choice_maps_to_the_function_calling_mode() -> None:
    def mode(choice: Any) -> dict[str, Any]:
        return request(hello(tools=[TIME], tool_choice=choice))["toolConfig"]["functionCallingConfig"]  # type: ignore[no-any-return]

    assert mode("auto") == {"mode": "AUTO"}
    assert mode("none") == {"mode": "NONE"}
    assert mode("required") == {"mode": "ANY"}
    assert mode({"type": "function", "function": {"name": "get_time"}}) == {
        "mode": "ANY",
        "allowedFunctionNames": ["get_time"],
    }
    with pytest.raises(BadRequest):
        mode("any")


def test_search_tools_beside_function_declarations_are_dropped() -> None:
    assert request(hello(web_search_options={}))["tools"] == [{"googleSearch": {}}]
    assert request(hello(tools=[TIME], web_search_options={}))["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_time",
                    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
                }
            ]
        }
    ]


@pytest.mark.parametrize(
    "param", ["logit_bias", "top_logprobs", "audio", "prediction", "verbosity", "function_call"]
)
def test_parameters_gemini_cannot_take_are_refused_naming_the_parameter(param: str) -> None:
    with pytest.raises(BadRequest) as refused:
        request(hello(**{param: {"x": 1}}))
    assert refused.value.param == param


def test_user_parallel_tool_calls_unknown_and_null_parameters_are_dropped() -> None:
    assert request(
        hello(user="u", parallel_tool_calls=False, metadata={"a": 1}, logit_bias=None, temperature=None)
    ) == {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}


def test_the_clients_body_is_left_unchanged() -> None:
    body = hello(tools=[WEATHER], response_format={"type": "json_schema", "json_schema": {"schema": SCHEMA}})
    before = copy.deepcopy(body)
    request(body)
    request(body, "gemini-exp-1206")
    assert body == before


# --- the answer -------------------------------------------------------------------------------


def test_text_parts_are_the_content_and_thought_parts_the_reasoning_content() -> None:
    parts = [text_part("Let me think.", thought=True), text_part("Yes, "), text_part("97 is prime.")]
    choice = message(response(parts, usage=usage_metadata(3, 4)))
    assert choice["message"] == {
        "role": "assistant",
        "content": "Yes, 97 is prime.",
        "reasoning_content": "Let me think.",
    }
    assert choice["finish_reason"] == "stop"


def test_function_calls_are_tool_calls_with_distinct_ids_and_json_arguments() -> None:
    parts = [call_part("get_weather", {"location": "Rome"}), call_part("get_weather", {"location": "Paris"})]
    choice = message(response(parts, usage=usage_metadata(3, 4)))
    calls = choice["message"]["tool_calls"]
    assert choice["message"]["content"] is None and choice["finish_reason"] == "tool_calls"
    assert [orjson.loads(c["function"]["arguments"]) for c in calls] == [
        {"location": "Rome"},
        {"location": "Paris"},
    ]
    assert all(c["id"].startswith("call_") and c["type"] == "function" for c in calls)
    assert len({c["id"] for c in calls}) == 2


def test_a_thought_signature_rides_in_the_tool_call_id_and_gemini_ids_are_kept() -> None:
    [call] = message(response([call_part("f", {}, signature="SIG", call_id="fc-1")]))["message"]["tool_calls"]
    assert call["id"] == "fc-1__thought__SIG"
    assert call["provider_specific_fields"] == {"thought_signature": "SIG"}


@pytest.mark.parametrize(
    ("native", "expected"),
    [("STOP", "stop"), ("MAX_TOKENS", "length"), ("OTHER", "content_filter"), ("SOMETHING_NEW", "stop")],
)
def test_finish_reasons_map_as_litellm_maps_them(native: str, expected: str) -> None:
    choice = message(response([text_part("Hel")], finish=native))
    assert (choice["finish_reason"], choice["message"]["content"]) == (expected, "Hel")


@pytest.mark.parametrize("flag", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT"])
def test_a_flagged_answer_withholds_its_text(flag: str) -> None:
    choice = message(response([text_part("Partial")], finish=flag))
    assert choice["message"] == {"role": "assistant", "content": None}
    assert choice["finish_reason"] == "content_filter"


def test_a_blocked_prompt_answers_content_filter() -> None:
    _, body = reply({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage_metadata(8, 0)})
    assert body["choices"][0]["finish_reason"] == "content_filter"


def test_usage_counts_cached_tokens_in_the_prompt_and_thoughts_in_the_completion() -> None:
    usage, body = reply(response([text_part("Hi")], usage=usage_metadata(100, 7, thoughts=30, cached=64)))
    assert usage == Usage(prompt_tokens=100, completion_tokens=37, cached_tokens=64, reasoning_tokens=30)
    assert body["usage"] == usage.to_openai()


def test_thoughts_already_inside_the_candidates_count_are_not_counted_twice() -> None:
    meta = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 50,
    }
    usage, _ = reply(response([text_part("Hi")], usage=meta))
    assert usage == Usage(prompt_tokens=10, completion_tokens=40, reasoning_tokens=30)


def test_the_id_is_the_response_id_and_the_model_the_served_version() -> None:
    _, body = reply(response([text_part("Hi")], response_id="resp-1", model_version="gemini-2.5-flash-001@x"))
    assert (body["id"], body["model"], body["object"]) == (
        "resp-1",
        "gemini-2.5-flash-001",
        "chat.completion",
    )
    _, anonymous = reply(response([text_part("Hi")]))
    assert anonymous["id"].startswith("chatcmpl-") and anonymous["model"] == FLASH


def test_an_answer_without_usage_has_none() -> None:
    usage, body = reply(response([text_part("Hi")]))
    assert usage is None and "usage" not in body


@pytest.mark.parametrize(
    "data",
    [
        b"<html>oops</html>",
        b"[1]",
        b'{"error": {"code": 429, "message": "slow down"}}',
        b'{"usageMetadata": {}}',
    ],
)
def test_a_200_that_is_not_an_answer_is_an_upstream_failure(data: bytes) -> None:
    with pytest.raises(UpstreamFailed):
        ADAPTER.chat_reply(data, FLASH)


# --- the stream -------------------------------------------------------------------------------


def _text_stream(response_id: str | None = "resp-s") -> list[dict[str, Any]]:
    return [
        response([text_part("Hel")], finish=None, usage=usage_metadata(5), response_id=response_id),
        response([text_part("lo")], finish="STOP", usage=usage_metadata(5, 2), response_id=response_id),
    ]


def test_every_chunk_carries_the_streams_one_id_and_the_first_names_the_role() -> None:
    _, events = stream(_text_stream())
    assert {c["id"] for c in chunks(events)} == {"resp-s"}
    assert {c["object"] for c in chunks(events)} == {"chat.completion.chunk"}
    assert deltas(events) == [
        ({"role": "assistant", "content": "Hel"}, None),
        ({"content": "lo"}, None),
        ({}, "stop"),
    ]
    assert all(e.data.startswith(b"data: {") and e.data.endswith(b"}\n\n") for e in events)


def test_a_stream_without_response_ids_gets_one_made_up_id() -> None:
    _, events = stream(_text_stream(None))
    [identity] = {c["id"] for c in chunks(events)}
    assert identity.startswith("chatcmpl-")


def test_the_stream_ends_with_one_usage_only_chunk_from_the_last_usage() -> None:
    mapper, events = stream(_text_stream())
    assert [e.is_usage_only for e in events] == [False, False, False, True]
    last = chunks(events)[-1]
    assert last["choices"] == [] and last["usage"] == Usage(prompt_tokens=5, completion_tokens=2).to_openai()
    assert mapper.usage == Usage(prompt_tokens=5, completion_tokens=2)


def test_a_prompt_only_count_is_not_taken_for_the_streams_usage() -> None:
    mapper = ADAPTER.stream_mapper(FLASH)
    mapper.event(orjson.dumps(_text_stream()[0]))
    assert mapper.usage is None  # cut here, the gateway estimates rather than record no completion


def test_function_calls_stream_as_indexed_tool_call_deltas_and_finish_as_tool_calls() -> None:
    _, events = stream(
        [
            response([call_part("get_weather", {"location": "Rome"})], finish=None),
            response([call_part("get_time", {"tz": "CET"})], finish=None),
            response([text_part("")], finish="STOP", usage=usage_metadata(5, 9)),
        ]
    )
    (first, _), (second, _), (end, finish) = deltas(events)
    assert [call["index"] for call in first["tool_calls"] + second["tool_calls"]] == [0, 1]
    assert second["tool_calls"][0]["function"] == {"name": "get_time", "arguments": '{"tz": "CET"}'}
    assert second["tool_calls"][0]["id"].startswith("call_") and second["tool_calls"][0]["type"] == "function"
    assert (end, finish) == ({}, "tool_calls")


def test_a_stream_whose_first_word_is_its_end_names_the_role_alone_first() -> None:
    _, events = stream([{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage_metadata(3)}])
    assert deltas(events) == [({"role": "assistant"}, None), ({}, "content_filter")]


def test_an_error_event_is_raised_as_the_gateways_error_after_what_came_before() -> None:
    mapper = ADAPTER.stream_mapper(FLASH)
    assert mapper.event(orjson.dumps(_text_stream()[0]))  # the first words are given to the relay
    with pytest.raises(RateLimited):
        mapper.event(
            b'{"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}'
        )
    with pytest.raises(UpstreamFailed):
        ADAPTER.stream_mapper(FLASH).event(b'{"error": {"code": 503, "message": "overloaded"}}')


def test_a_stream_without_usage_ends_without_a_usage_chunk() -> None:
    mapper, events = stream([response([text_part("Hi")])])
    assert not any(e.is_usage_only for e in events) and mapper.usage is None


# --- over the relay ---------------------------------------------------------------------------


async def test_the_relay_calls_the_credentials_root_with_the_key_in_x_goog_api_key(
    fake_provider: FakeProvider,
) -> None:
    model = unique("gemini-2.5-flash")
    relay = AdaptedRelay(ProviderConnections(TIMEOUTS), ADAPTER)
    target = UpstreamTarget("gemini", model, Secret(KEY), fake_provider.base_url, True)
    try:
        answer = await relay.chat(target, hello(max_tokens=9))
        streamed = [event async for event in relay.chat_stream(target, hello(stream=True))]
    finally:
        await relay.connections.aclose()
    plain, live = fake_provider.received(model)
    assert (plain.path, plain.query, plain.api_key) == (f"/v1beta/models/{model}:generateContent", "", KEY)
    assert (live.path, live.query) == (f"/v1beta/models/{model}:streamGenerateContent", "alt=sse")
    assert plain.headers["x-goog-api-key"] == KEY and "authorization" not in plain.headers
    assert plain.body["generationConfig"] == {"maxOutputTokens": 9}
    assert answer.usage == Usage(prompt_tokens=11, completion_tokens=7)
    text = "".join(delta.get("content") or "" for delta, _ in deltas(streamed))
    assert text == "Hello from the fake provider." and streamed[-1].is_usage_only
