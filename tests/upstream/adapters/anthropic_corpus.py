"""Exchanges for the Anthropic differential test: an OpenAI chat request and Anthropic's raw answer.

Each exchange runs through litellm's translation and through the gateway's adapter against the same
scripted answer (streamed from the same message, `stream_of`). `differences` lists where the two
are expected to differ, each with why the adapter's choice is the right one: a dotted path into the
provider request (`request.…`), the answer (`answer.…`, the stream's reassembled answer included) or
the headers (`headers.…`). The test checks each listed path really differs, and everything else
matches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.fakes.anthropic_wire import error_event, message, stream_of, text, thinking, tool_use

SONNET = "claude-sonnet-4-5"  # structured outputs, budget thinking, 64000 output tokens
OPUS = "claude-opus-4-6"  # adaptive thinking
HAIKU_35 = (
    "claude-3-5-haiku-20241022"  # litellm's map has no entry: 4096 tokens, json_schema as a forced tool
)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

# Why the adapter differs from litellm wherever a difference is listed.
TOOL_CALL_INDEX = (
    "litellm puts the Anthropic content block's position as `index` on a non-streamed tool call; "
    "OpenAI's message.tool_calls carry no index"
)
TOOL_CHOICE_WITHOUT_TOOLS = (
    "litellm sends tool_choice with no tools, which Anthropic refuses (tool_choice may only be "
    "specified while providing tools); the adapter leaves it out"
)
REF_REWRITE = (
    "litellm rewrites every $ref of a json_schema to `/$defs/<name>`, a pointer that resolves nowhere; "
    "the forced tool gets the client's `#/$defs/…` as written"
)
STREAM_ERROR_KIND = (
    "litellm reports every mid-stream error event as a provider 500; the adapter keeps Anthropic's "
    "kind, so a rate_limit_error is a 429 the router can cool down on"
)


@dataclass(frozen=True)
class Exchange:
    name: str
    model: str
    request: dict[str, Any]
    answer: dict[str, Any] | None = None  # Anthropic's message: sent as is, and as its stream
    events: list[bytes] | None = None  # a stream that is not `stream_of(answer)` (errors)
    refused: bool = False  # both sides answer 400 before calling the provider
    differences: dict[str, str] = field(default_factory=dict)

    def stream_events(self) -> list[bytes] | None:
        if self.events is not None:
            return self.events
        return stream_of(self.answer) if self.answer is not None else None


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "title": "WeatherArgs",
            "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["location"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
    },
}
PERSON = {
    "type": "json_schema",
    "json_schema": {
        "name": "person",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "age": {"type": "integer", "minimum": 0},
                "address": {"$ref": "#/$defs/Address"},
            },
            "required": ["name", "age"],
            "additionalProperties": False,
            "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}},
        },
    },
}
CACHED_USAGE = {
    "input_tokens": 40,
    "cache_creation_input_tokens": 1200,
    "cache_read_input_tokens": 3000,
    "output_tokens": 18,
}

CORPUS = [
    Exchange(
        "plain_text",
        SONNET,
        {"messages": [user("Say hello")]},
        message([text("Hello! How can I help you today?")]),
    ),
    Exchange(
        "system_prompt_and_sampling",
        SONNET,
        {
            "messages": [
                {"role": "developer", "content": "Answer in French."},
                {
                    "role": "system",
                    "content": [
                        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
                    ],
                },
                user("Hello"),
            ],
            "temperature": 0.2,
            "top_p": 0.9,
            "max_tokens": 300,
        },
        message([text("Bonjour.")]),
    ),
    Exchange(
        "multi_turn_merged_and_late_system",
        SONNET,
        {
            "messages": [
                user("My name is Ann."),
                user([{"type": "text", "text": "Remember it."}]),
                {"role": "assistant", "content": "I will remember, Ann."},
                {"role": "assistant", "content": [{"type": "text", "text": "Anything else?"}]},
                {"role": "system", "content": "Stay formal."},
                user(""),
                {"role": "assistant", "content": "Your name is   "},
            ],
        },
        message([text("Ann.")]),
    ),
    Exchange(
        "tool_call",
        SONNET,
        {"messages": [user("Weather in Paris?")], "tools": [WEATHER], "tool_choice": "auto"},
        message(
            [
                text("Let me check."),
                tool_use("toolu_01A09q90qw90lq917835lq9", "get_weather", {"location": "Paris"}),
            ],
            stop="tool_use",
        ),
        differences={"answer.tool_calls.index": TOOL_CALL_INDEX},
    ),
    Exchange(
        "parallel_tool_calls_required",
        SONNET,
        {
            "messages": [user("Weather and time in Zürich?")],
            "tools": [WEATHER, TIME],
            "tool_choice": "required",
            "parallel_tool_calls": True,
        },
        message(
            [
                tool_use("toolu_01WeatherZurich", "get_weather", {"location": "Zürich", "unit": "c"}),
                tool_use("toolu_01TimeZurich", "get_time", {"zone": "Europe/Zurich"}),
            ],
            stop="tool_use",
        ),
        differences={"answer.tool_calls.index": TOOL_CALL_INDEX},
    ),
    Exchange(
        "one_tool_at_a_time_named_choice",
        SONNET,
        {
            "messages": [user("Time in Tokyo?")],
            "tools": [WEATHER, TIME],
            "tool_choice": {"type": "function", "function": {"name": "get_time"}},
            "parallel_tool_calls": False,
        },
        message([tool_use("toolu_01TimeTokyo", "get_time", {})], stop="tool_use"),
        differences={"answer.tool_calls.index": TOOL_CALL_INDEX},
    ),
    Exchange(
        "tool_results_round_trip",
        SONNET,
        {
            "messages": [
                user("Weather in Paris and Rome?"),
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "toolu_01Paris",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
                        },
                        {
                            "id": "call.rome-2",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"location": "Rome"'},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "toolu_01Paris", "content": "18C and sunny"},
                {"role": "tool", "tool_call_id": "call.rome-2", "content": [{"type": "text", "text": "21C"}]},
                user("Which is warmer?"),
            ],
            "tools": [WEATHER],
        },
        message([text("Rome is warmer.")]),
    ),
    Exchange(
        "tool_calls_replayed_without_tools",
        SONNET,
        {
            "messages": [
                user("Weather in Oslo?"),
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "toolu_01Oslo",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "toolu_01Oslo", "content": "-3C"},
            ],
        },
        message([text("It is cold in Oslo.")]),
    ),
    Exchange(
        "images_data_url_and_https",
        SONNET,
        {
            "messages": [
                user(
                    [
                        {"type": "text", "text": "What do these show?"},
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "high"},
                        },
                        {"type": "image_url", "image_url": "https://example.com/cat.jpg"},
                        {
                            "type": "image_url",
                            "image_url": {"url": f"data:image/webp;base64,{PNG}", "format": "image/png"},
                        },
                    ]
                )
            ]
        },
        message([text("A pixel and a cat.")]),
    ),
    Exchange(
        "stop_sequences",
        SONNET,
        {"messages": [user("Count to ten")], "stop": ["5", "\n\n"]},
        message([text("1, 2, 3, 4, ")], stop="stop_sequence", stop_sequence="5"),
    ),
    Exchange(
        "max_tokens_cut",
        SONNET,
        {"messages": [user("Write an essay")], "max_completion_tokens": 5},
        message([text("The history of")], stop="max_tokens", usage={"input_tokens": 10, "output_tokens": 5}),
    ),
    Exchange(
        "json_object_mode",
        SONNET,
        {"messages": [user("A person as JSON")], "response_format": {"type": "json_object"}},
        message([text('{"name": "Ann"}')]),
    ),
    Exchange(
        "json_schema_structured_output",
        SONNET,
        {"messages": [user("A person")], "response_format": PERSON},
        message([text('{"name": "Ann", "age": 31}')]),
    ),
    Exchange(
        "json_schema_forced_tool",
        HAIKU_35,
        {"messages": [user("A person")], "response_format": PERSON},
        message(
            [
                tool_use(
                    "toolu_01Json", "json_tool_call", {"name": "Ann", "age": 31, "address": {"city": "Oslo"}}
                )
            ],
            stop="tool_use",
            model=HAIKU_35,
        ),
        differences={"request.tools.input_schema.properties.address.$ref": REF_REWRITE},
    ),
    Exchange(
        "cached_tokens_usage",
        SONNET,
        {"messages": [user("Summarise the document again")], "user": "user-7f3a"},
        message([text("Here is the summary.")], usage=CACHED_USAGE),
    ),
    Exchange(
        "thinking_budget",
        SONNET,
        {"messages": [user("Is 1001 prime?")], "reasoning_effort": "low"},
        message(
            [
                thinking("1001 = 7 * 11 * 13, so it is not prime."),
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                text("No: 1001 = 7 · 11 · 13."),
            ],
            usage={"input_tokens": 30, "output_tokens": 64},
        ),
    ),
    Exchange(
        "adaptive_thinking",
        OPUS,
        {"messages": [user("Plan a trip")], "reasoning_effort": "high", "max_tokens": 2000},
        message([thinking("Consider the budget first."), text("Start in Lisbon.")], model=OPUS),
    ),
    Exchange(
        "refusal_stop_reason",
        SONNET,
        {"messages": [user("Something harmful")]},
        message([text("I can't help with that.")], stop="refusal"),
    ),
    Exchange(
        "pause_turn_stop_reason",
        SONNET,
        {"messages": [user("Search the web")], "web_search_options": {"search_context_size": "low"}},
        message([text("Searching")], stop="pause_turn"),
    ),
    Exchange(
        "empty_content",
        SONNET,
        {"messages": [user("Say nothing")]},
        message([], usage={"input_tokens": 9, "output_tokens": 2}),
    ),
    Exchange(
        "tool_names_anthropic_refuses",
        SONNET,
        {
            "messages": [user("Look it up")],
            "tools": [
                {"type": "function", "function": {"name": "ns.lookup/v2", "parameters": {"type": "object"}}}
            ],
            "tool_choice": {"type": "function", "function": {"name": "ns.lookup/v2"}},
        },
        message([tool_use("toolu_01Lookup", "ns_lookup_v2", {"q": "x"})], stop="tool_use"),
        differences={"answer.tool_calls.index": TOOL_CALL_INDEX},
    ),
    Exchange(
        "default_output_cap_of_an_unmapped_model",
        "claude-3-5-haiku-latest",
        {"messages": [user("Hi")], "user": "ann@example.com"},
        message([text("Hi!")], model="claude-3-5-haiku-20241022"),
    ),
    Exchange(
        "parallel_tool_calls_without_tools",
        SONNET,
        {"messages": [user("Hi")], "parallel_tool_calls": False},
        message([text("Hi!")]),
        differences={"request.tool_choice": TOOL_CHOICE_WITHOUT_TOOLS},
    ),
    Exchange(
        "thinking_parameter_without_a_cap",
        SONNET,
        {"messages": [user("Think hard")], "thinking": {"type": "enabled", "budget_tokens": 3000}},
        message([thinking("Hard thought."), text("Done.")]),
    ),
    Exchange(
        "adaptive_thinking_asked_of_an_older_model",
        SONNET,
        {"messages": [user("Think")], "thinking": {"type": "adaptive"}, "max_tokens": 1500},
        message([text("Done.")]),
    ),
    Exchange(
        "budget_thinking_asked_of_a_model_that_only_adapts",
        "claude-opus-4-7",
        {
            "messages": [user("Think")],
            "thinking": {"type": "enabled", "budget_tokens": 5000},
            "temperature": 1,
        },
        message([text("Done.")], model="claude-opus-4-7"),
    ),
    Exchange(
        "effort_the_model_lacks",
        OPUS,
        {"messages": [user("Think")], "reasoning_effort": "xhigh"},
        refused=True,
    ),
    Exchange(
        "thinking_replayed_with_tool_use",
        SONNET,
        {
            "messages": [
                user("Weather in Oslo?"),
                {
                    "role": "assistant",
                    "content": None,
                    "thinking_blocks": [
                        {"type": "thinking", "thinking": "Use the tool.", "signature": "c2lnbmF0dXJl"},
                        {"type": "thinking", "thinking": "unsigned", "signature": ""},
                        {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
                    ],
                    "tool_calls": [
                        {
                            "id": "toolu_01Oslo",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"location": "Oslo"}'},
                        }
                    ],
                },
                {"role": "system", "content": "Use Celsius."},
                {"role": "tool", "tool_call_id": "toolu_01Oslo", "content": "-3"},
            ],
            "tools": [WEATHER],
            "reasoning_effort": "medium",
        },
        message([thinking("It is cold."), text("-3C in Oslo.")]),
    ),
    Exchange(
        "documents_and_tool_result_images",
        SONNET,
        {
            "messages": [
                user(
                    [
                        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0xLjQK"}},
                        {
                            "type": "file",
                            "file": {"file_id": "file_011CNha8iCJcU1wXNR6q4V8w", "format": "application/pdf"},
                        },
                        {"type": "text", "text": "Summarise", "cache_control": {"type": "ephemeral"}},
                    ]
                ),
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "toolu_01Shot",
                            "type": "function",
                            "function": {"name": "screenshot", "arguments": "{}"},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "toolu_01Shot",
                    "content": [
                        {"type": "text", "text": "the screen"},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:application/pdf;base64,JVBERi0xLjQK"},
                        },
                    ],
                    "cache_control": {"type": "ephemeral"},
                },
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "screenshot", "parameters": {"type": "object", "properties": {}}},
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
        message([text("A report and a screen.")]),
    ),
    Exchange(
        "web_search_with_location_and_hosted_tools",
        SONNET,
        {
            "messages": [user("News near me")],
            "web_search_options": {
                "search_context_size": "high",
                "user_location": {"type": "approximate", "approximate": {"city": "Oslo", "country": "NO"}},
            },
            "tools": [{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2}],
            "stop": "END",
            "user": "+47 22 00 00 00",
        },
        message([text("Here is the news.")]),
    ),
    Exchange(
        "tool_input_schema_cleaned",
        SONNET,
        {
            "messages": [user("Book it")],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "book",
                        "description": "Book a room",
                        "parameters": {
                            "type": "object",
                            "title": "Booking",
                            "description": "dropped",
                            "properties": {
                                "room": {"$ref": "#/definitions/Room"},
                                "nights": {"type": "integer", "minimum": 1},
                            },
                            "required": ["room"],
                            "additionalProperties": False,
                            "definitions": {"Room": {"type": "string", "enum": ["single", "double"]}},
                        },
                    },
                },
                {"type": "function", "function": {"name": "noop"}},
            ],
        },
        message([tool_use("toolu_01Book", "book", {"room": "double", "nights": 2})], stop="tool_use"),
        differences={"answer.tool_calls.index": TOOL_CALL_INDEX},
    ),
    Exchange(
        "max_tokens_as_a_float_and_stop_as_a_string",
        HAIKU_35,
        {"messages": [user("Hi")], "max_tokens": 99.6, "stop": "\n"},
        message([text("Hi")], model=HAIKU_35, stop="stop_sequence", stop_sequence="\n"),
    ),
    Exchange(
        "unsupported_parameter",
        SONNET,
        {"messages": [user("Hi")], "seed": 7, "presence_penalty": 0.5},
        refused=True,
    ),
    Exchange(
        "stream_overloaded_mid_answer",
        SONNET,
        {"messages": [user("Hi")]},
        events=[*stream_of(message([text("Hel")]))[:4], error_event("overloaded_error", "Overloaded")],
    ),
    Exchange(
        "stream_rate_limited_mid_answer",
        SONNET,
        {"messages": [user("Hi")]},
        events=[*stream_of(message([text("Hel")]))[:4], error_event("rate_limit_error", "Rate limited")],
        differences={"answer.error_status": STREAM_ERROR_KIND},
    ),
]
