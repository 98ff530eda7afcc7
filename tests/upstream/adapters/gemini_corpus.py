"""Exchanges for the Gemini differential test: an OpenAI chat request and the provider's raw answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakes.gemini_wire import call_part, response, text_part, usage_metadata

FLASH = "gemini-2.5-flash"
PRO = "gemini-2.5-pro"
GEMINI_3 = "gemini-3-pro-preview"
LATEST = (
    "gemini-flash-latest"  # litellm reads it as a Gemini 3 model, and gives it the OpenAPI responseSchema
)
PDF = "JVBERi0xLjQKJcOkw7zDtsOfCg=="
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
SIGNATURE = "Q2lNQkFUc3NTZ0tYc2lnbmF0dXJl"


@dataclass(frozen=True)
class Exchange:
    name: str
    model: str
    request: dict[str, Any]
    answer: dict[str, Any] | None = None  # the provider's JSON answer (a non-streamed call)
    events: tuple[dict[str, Any], ...] | None = None  # the provider's stream events (a streamed call)
    # Neither answer nor events: the call is refused before any provider request.

    @property
    def stream(self) -> bool:
        return self.events is not None

    @property
    def reaches_the_provider(self) -> bool:
        return self.answer is not None or self.events is not None


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City", "format": "uri-reference"},
                "unit": {"anyOf": [{"type": "string", "enum": ["c", "f", ""]}, {"type": "null"}]},
                "days": {"type": ["integer", "null"], "enum": [1, 2, 3], "description": "How many"},
                "place": {"$ref": "#/$defs/Place"},
                "tags": {"type": "array"},
                "extra": {"type": "object", "properties": {}},
            },
            "required": ["location"],
            "additionalProperties": False,
            "$defs": {
                "Place": {
                    "type": "object",
                    "title": "Place",
                    "properties": {"lat": {"type": "number", "minimum": -90}, "lon": {"type": "number"}},
                }
            },
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    },
}
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "pets": {"type": "array", "items": {"type": "object", "properties": {"kind": {"type": "string"}}}},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def _answer(parts: list[dict[str, Any]], finish: str = "STOP", **usage: int) -> dict[str, Any]:
    counts = {"prompt": 21, "candidates": 9, **usage}
    return response(
        parts,
        finish=finish,
        usage=usage_metadata(
            counts.pop("prompt"),
            counts.pop("candidates"),
            thoughts=counts.get("thoughts", 0),
            cached=counts.get("cached", 0),
        ),
        response_id="resp-corpus-1",
        model_version="gemini-2.5-flash-001",
    )


def _text_events(
    pieces: list[str], finish: str = "STOP", rid: str | None = "resp-stream-1"
) -> tuple[Any, ...]:
    events = [
        response(
            [text_part(piece)], finish=None, usage=usage_metadata(14), response_id=rid, model_version=FLASH
        )
        for piece in pieces[:-1]
    ]
    events.append(
        response(
            [text_part(pieces[-1])],
            finish=finish,
            usage=usage_metadata(14, 6),
            response_id=rid,
            model_version=FLASH,
        )
    )
    return tuple(events)


CORPUS: list[Exchange] = [
    Exchange(
        "plain_text",
        FLASH,
        {"messages": [user("Say hello")], "max_tokens": 50},
        _answer([text_part("Hello there.")]),
    ),
    Exchange(
        "plain_text_stream",
        FLASH,
        {"messages": [user("Say hello")], "max_tokens": 50, "stream": True},
        events=_text_events(["Hello ", "from ", "Gemini."]),
    ),
    Exchange(
        "system_and_developer_prompts",
        FLASH,
        {
            "messages": [
                {"role": "system", "content": "Be terse."},
                {"role": "developer", "content": [{"type": "text", "text": "Answer in French."}]},
                user("Say hello"),
            ]
        },
        _answer([text_part("Bonjour.")]),
    ),
    Exchange(
        "multi_turn_merges_consecutive_roles",
        FLASH,
        {
            "messages": [
                user("Hi"),
                {"role": "assistant", "content": "Hello! How can I help?"},
                {"role": "assistant", "content": [{"type": "text", "text": "Ask me anything."}]},
                user("What is 2+2?"),
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": ""}],
                },
            ],
            "temperature": 0.2,
        },
        _answer([text_part("4")]),
    ),
    Exchange(
        "tool_call_with_a_schema_to_clean",
        FLASH,
        {"messages": [user("Weather in Paris?")], "tools": [WEATHER], "tool_choice": "auto"},
        _answer([call_part("get_weather", {"location": "Paris", "days": 2})]),
    ),
    Exchange(
        "tool_choice_named_and_text_before_the_call",
        FLASH,
        {
            "messages": [user("Weather in Paris?")],
            "tools": [WEATHER, TIME],
            "tool_choice": {"type": "function", "function": {"name": "get_time"}},
        },
        _answer([text_part("Let me check."), call_part("get_time", {"tz": "Europe/Paris"})]),
    ),
    Exchange(
        "parallel_function_calls",
        FLASH,
        {"messages": [user("Weather in Paris and Rome?")], "tools": [WEATHER], "tool_choice": "required"},
        _answer(
            [
                call_part("get_weather", {"location": "Paris"}),
                call_part("get_weather", {"location": "Rome", "note": "été"}),
            ]
        ),
    ),
    Exchange(
        "parallel_function_calls_stream",
        FLASH,
        {"messages": [user("Weather and time in Rome?")], "tools": [WEATHER, TIME], "stream": True},
        events=(
            response(
                [call_part("get_weather", {"location": "Rome"})],
                finish=None,
                usage=usage_metadata(30),
                response_id="resp-tools-1",
                model_version=FLASH,
            ),
            response(
                [call_part("get_time", {"tz": "Europe/Rome"})],
                finish="STOP",
                usage=usage_metadata(30, 12),
                response_id="resp-tools-1",
                model_version=FLASH,
            ),
        ),
    ),
    Exchange(
        "function_results_round_trip",
        FLASH,
        {
            "messages": [
                user("Weather and time in Rome?"),
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"location": "Rome"}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_time", "arguments": ""},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "call_a", "content": '{"temp_c": 21, "sky": "clear"}'},
                {"role": "tool", "tool_call_id": "call_b", "content": "14:05"},
                user("Thanks, and tomorrow?"),
            ],
            "tools": [WEATHER, TIME],
        },
        _answer([text_part("Tomorrow looks clear too.")]),
    ),
    Exchange(
        "image_from_a_data_url",
        FLASH,
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in this picture?"},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                    ],
                }
            ]
        },
        _answer([text_part("A single pixel.")]),
    ),
    Exchange(
        "image_only_gets_a_blank_text_part",
        FLASH,
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": f"data:image/jpeg;base64,{PNG}"}],
                }
            ]
        },
        _answer([text_part("A pixel.")]),
    ),
    Exchange(
        "sampling_parameters_and_stop_sequences",
        FLASH,
        {
            "messages": [user("Count to ten")],
            "stop": ["5", "six"],
            "temperature": 0.7,
            "top_p": 0.9,
            "seed": 42,
            "n": 1,
            "presence_penalty": 0.5,
            "frequency_penalty": 0.25,
            "max_completion_tokens": 64,
            "user": "someone",
            "parallel_tool_calls": True,
        },
        _answer([text_part("1 2 3 4 ")]),
    ),
    Exchange(
        "max_tokens_cut",
        FLASH,
        {"messages": [user("Tell me a story")], "max_tokens": 5, "stop": "THE END"},
        _answer([text_part("Once upon a time")], finish="MAX_TOKENS", candidates=5),
    ),
    Exchange(
        "max_tokens_cut_stream",
        FLASH,
        {"messages": [user("Tell me a story")], "max_tokens": 5, "stream": True},
        events=_text_events(["Once upon ", "a time"], finish="MAX_TOKENS"),
    ),
    Exchange(
        "json_mode",
        FLASH,
        {"messages": [user("A person as JSON")], "response_format": {"type": "json_object"}},
        _answer([text_part('{"name": "Ada"}')]),
    ),
    Exchange(
        "json_schema",
        FLASH,
        {
            "messages": [user("A person")],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "person", "strict": True, "schema": SCHEMA},
            },
        },
        _answer([text_part('{"name": "Ada", "age": 36}')]),
    ),
    Exchange(
        "json_schema_as_openapi_for_an_older_model_name",
        LATEST,
        {
            "messages": [user("A person")],
            "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}},
        },
        _answer([text_part('{"name": "Ada", "age": 36}')]),
    ),
    Exchange(
        "cached_tokens",
        FLASH,
        {"messages": [user("Summarise the cached document")]},
        _answer([text_part("It is about caching.")], prompt=4000, cached=3072),
    ),
    Exchange(
        "thoughts_and_reasoning_tokens",
        PRO,
        {"messages": [user("Is 97 prime?")], "reasoning_effort": "high"},
        _answer(
            [text_part("Check divisors up to 9.", thought=True), text_part("Yes, 97 is prime.")],
            candidates=6,
            thoughts=120,
        ),
    ),
    Exchange(
        "thoughts_stream",
        PRO,
        {"messages": [user("Is 97 prime?")], "reasoning_effort": "low", "stream": True},
        events=(
            response(
                [text_part("Check divisors.", thought=True)],
                finish=None,
                usage=usage_metadata(10, None, thoughts=40),
                response_id="resp-think-1",
                model_version=PRO,
            ),
            response(
                [text_part("Yes, ")],
                finish=None,
                usage=usage_metadata(10, 2, thoughts=40),
                response_id="resp-think-1",
                model_version=PRO,
            ),
            response(
                [text_part("it is prime.")],
                finish="STOP",
                usage=usage_metadata(10, 5, thoughts=40),
                response_id="resp-think-1",
                model_version=PRO,
            ),
        ),
    ),
    Exchange(
        "safety_finish",
        FLASH,
        {"messages": [user("Something unsafe")]},
        _answer([text_part("I can")], finish="SAFETY", candidates=2),
    ),
    Exchange(
        "other_finish_keeps_the_text",
        FLASH,
        {"messages": [user("Hi")]},
        _answer([text_part("Hel")], finish="OTHER", candidates=2),
    ),
    Exchange(
        "prompt_blocked",
        FLASH,
        {"messages": [user("Something unsafe")]},
        {
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": usage_metadata(8, 0),
            "responseId": "resp-blocked",
        },
    ),
    Exchange(
        "no_response_id",
        FLASH,
        {"messages": [user("Hi")]},
        response([text_part("Hi!")], usage=usage_metadata(3, 2)),
    ),
    Exchange(
        "no_response_id_stream",
        FLASH,
        {"messages": [user("Hi")], "stream": True},
        events=_text_events(["Hi ", "there!"], rid=None),
    ),
    Exchange(
        "gemini_3_thinking_level_and_signed_calls",
        GEMINI_3,
        {
            "messages": [
                user("Weather in Rome?"),
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": f"call_x__thought__{SIGNATURE}",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"location": "Rome"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": f"call_x__thought__{SIGNATURE}", "content": "sunny"},
            ],
            "tools": [WEATHER],
            "reasoning_effort": "low",
            "presence_penalty": 0.3,
        },
        _answer([call_part("get_weather", {"location": "Milan"}, signature=SIGNATURE)], thoughts=30),
    ),
    Exchange(
        "gemini_3_stream_with_native_call_ids",
        GEMINI_3,
        {"messages": [user("Weather in Rome?")], "tools": [WEATHER], "stream": True, "temperature": 0.5},
        events=(
            response(
                [text_part("Checking. ")],
                finish=None,
                usage=usage_metadata(12),
                response_id="resp-g3",
                model_version=GEMINI_3,
            ),
            response(
                [call_part("get_weather", {"location": "Rome"}, signature=SIGNATURE, call_id="fc-1")],
                finish=None,
                usage=usage_metadata(12),
                response_id="resp-g3",
                model_version=GEMINI_3,
            ),
            response(
                [text_part("")],
                finish="STOP",
                usage=usage_metadata(12, 8, thoughts=16),
                response_id="resp-g3",
                model_version=GEMINI_3,
            ),
        ),
    ),
    Exchange(
        "prompt_blocked_stream",
        FLASH,
        {"messages": [user("Something unsafe")], "stream": True},
        events=(
            {
                "promptFeedback": {"blockReason": "OTHER"},
                "usageMetadata": usage_metadata(8),
                "responseId": "r-b",
            },
        ),
    ),
    Exchange(
        "two_candidates",
        FLASH,
        {"messages": [user("Name a colour")], "n": 2},
        {
            "candidates": [
                {
                    "content": {"parts": [text_part("Red")], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                },
                {
                    "content": {"parts": [text_part("Blue")], "role": "model"},
                    "finishReason": "STOP",
                    "index": 1,
                },
            ],
            "usageMetadata": usage_metadata(5, 2),
            "responseId": "resp-two",
        },
    ),
    Exchange(
        "json_schema_on_gemini_3_and_tool_choice_none",
        GEMINI_3,
        {
            "messages": [user("A person")],
            "tools": [TIME],
            "tool_choice": "none",
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "p", "strict": True, "schema": SCHEMA},
            },
        },
        _answer([text_part('{"name": "Ada", "age": 36}')]),
    ),
    Exchange(
        "web_search_beside_functions_is_dropped",
        FLASH,
        {"messages": [user("News?")], "tools": [TIME, {"type": "web_search"}], "web_search_options": {}},
        _answer([text_part("Nothing new.")]),
    ),
    Exchange(
        "web_search_alone",
        FLASH,
        {"messages": [user("News?")], "web_search_options": {"search_context_size": "low"}},
        _answer([text_part("Nothing new.")]),
    ),
    Exchange(
        "minimal_effort_on_flash_lite_and_more_knobs",
        "gemini-2.5-flash-lite",
        {
            "messages": [user("Hi")],
            "reasoning_effort": "minimal",
            "logprobs": True,
            "modalities": ["text"],
            "service_tier": "auto",
        },
        _answer([text_part("Hi.")]),
    ),
    Exchange(
        "anthropic_style_thinking_parameter",
        PRO,
        {"messages": [user("Hi")], "thinking": {"type": "enabled", "budget_tokens": 2000}},
        _answer([text_part("Hi.")]),
    ),
    Exchange(
        "legacy_functions",
        FLASH,
        {"messages": [user("Time?")], "functions": [TIME["function"]]},
        _answer([text_part("Noon.")]),
    ),
    Exchange(
        "gemma_takes_the_system_prompt_as_user_text",
        "gemma-3-27b-it",
        {"messages": [{"role": "system", "content": "Be terse."}, user("Hi")]},
        _answer([text_part("Hi.")]),
    ),
    Exchange(
        "pdf_and_audio_and_image_detail_on_gemini_2",
        FLASH,
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Compare"},
                        {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}"}},
                        {"type": "input_audio", "input_audio": {"data": PDF, "format": "wav"}},
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "high"},
                        },
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
                        },
                    ],
                }
            ]
        },
        _answer([text_part("Same.")]),
    ),
    Exchange(
        "image_detail_on_gemini_3_is_per_part",
        GEMINI_3,
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Look"},
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
                        },
                    ],
                }
            ]
        },
        _answer([text_part("A pixel.")]),
    ),
    Exchange(
        "tool_result_as_content_parts_and_a_json_list",
        FLASH,
        {
            "messages": [
                user("Files?"),
                {
                    "role": "assistant",
                    "content": "Looking.",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "12:00"}]},
                {"role": "tool", "tool_call_id": "c2", "content": "[1, 2]"},
            ],
            "tools": [TIME, WEATHER],
        },
        _answer([text_part("Done.")]),
    ),
    Exchange("logit_bias_is_refused", FLASH, {"messages": [user("Hi")], "logit_bias": {"50256": -100}}),
    Exchange(
        "reasoning_on_a_model_without_it_is_refused",
        "gemini-2.0-flash",
        {"messages": [user("Hi")], "reasoning_effort": "low"},
    ),
    Exchange(
        "unknown_reasoning_effort_is_refused",
        FLASH,
        {"messages": [user("Hi")], "reasoning_effort": "extreme"},
    ),
    Exchange(
        "unknown_tool_choice_is_refused",
        FLASH,
        {"messages": [user("Hi")], "tools": [TIME], "tool_choice": "any"},
    ),
    Exchange(
        "error_inside_a_200",
        FLASH,
        {"messages": [user("Hi")]},
        {"error": {"code": 429, "message": "Resource has been exhausted.", "status": "RESOURCE_EXHAUSTED"}},
    ),
    Exchange(
        "error_event_mid_stream",
        FLASH,
        {"messages": [user("Hi")], "stream": True},
        events=(
            response(
                [text_part("Hel")],
                finish=None,
                usage=usage_metadata(4),
                response_id="r-e",
                model_version=FLASH,
            ),
            {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
        ),
    ),
    Exchange(
        "safety_finish_after_thoughts_from_a_cache",
        PRO,
        {"messages": [user("Something unsafe")]},
        _answer([text_part("I", thought=True)], finish="SAFETY", candidates=1, thoughts=50, cached=10),
    ),
    Exchange(
        "answer_without_usage",
        FLASH,
        {"messages": [user("Hi")]},
        response([text_part("Hi!")], response_id="resp-nousage"),
    ),
]
