"""Deeply nested JSON in a /v1 request (a schema, a tool's input) is a 400 in the surface's shape, never
a 500, whichever provider kind the call goes to; and nothing reaches the provider."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.llm.conftest import Caller, unique_model

MESSAGES = [{"role": "user", "content": "hi"}]
DEEP = "@deep@"  # where the nested text goes (clients' JSON encoders refuse to build it themselves)


def _nested_schema(levels: int) -> str:
    """A JSON Schema with `levels` objects inside one another (twice as deep as JSON)."""
    return '{"type": "object", "properties": {"a": ' * levels + '{"type": "string"}' + "}}" * levels


def _nested_value(levels: int) -> str:
    return '{"a": ' * levels + '"x"' + "}" * levels


def _post(caller: Caller, path: str, body: dict[str, Any], deep: str) -> httpx.Response:
    raw = orjson.dumps(body).decode().replace(f'"{DEEP}"', deep)
    return caller.user.client.post(path, content=raw, headers={"content-type": "application/json"})


def _assert_openai_400(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]


def _assert_anthropic_400(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("levels", [450, 900])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_deeply_nested_response_format_is_a_400(
    caller: Caller, fake_provider: Any, stream: bool, levels: int, provider: str
) -> None:
    model = unique_model("deep")
    body = {
        "model": f"{provider}/{model}",
        "messages": MESSAGES,
        "stream": stream,
        "response_format": {"type": "json_schema", "json_schema": {"name": "deep", "schema": DEEP}},
    }
    _assert_openai_400(_post(caller, "/v1/chat/completions", body, _nested_schema(levels)))
    assert fake_provider.received(model) == []


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_deeply_nested_responses_text_format_is_a_400(
    caller: Caller, fake_provider: Any, stream: bool, provider: str
) -> None:
    model = unique_model("deep")
    body = {
        "model": f"{provider}/{model}",
        "input": "hi",
        "stream": stream,
        "text": {"format": {"type": "json_schema", "name": "deep", "schema": DEEP}},
    }
    _assert_openai_400(_post(caller, "/v1/responses", body, _nested_schema(450)))
    assert fake_provider.received(model) == []


TOOL_USE = [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": DEEP}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
]
MESSAGES_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "tool_use.input": ({"messages": TOOL_USE}, _nested_value(900)),
    "tool input_schema": (
        {"messages": MESSAGES, "tools": [{"name": "f", "description": "d", "input_schema": DEEP}]},
        _nested_schema(450),
    ),
}


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
@pytest.mark.parametrize("case", sorted(MESSAGES_CASES))
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_deeply_nested_messages_tools_are_a_400(
    caller: Caller, fake_provider: Any, path: str, case: str, provider: str
) -> None:
    model = unique_model("deep")
    fields, deep = MESSAGES_CASES[case]
    body = {"model": f"{provider}/{model}", "max_tokens": 50, **fields}
    _assert_anthropic_400(_post(caller, path, body, deep))
    assert fake_provider.received(model) == []


def test_a_moderately_nested_response_format_still_reaches_gemini(caller: Caller, fake_provider: Any) -> None:
    model = unique_model("nested")
    body = {
        "model": f"gemini/{model}",
        "messages": MESSAGES,
        "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": DEEP}},
    }
    response = _post(caller, "/v1/chat/completions", body, _nested_schema(20))
    assert response.status_code == 200, response.text
    assert len(fake_provider.received(model)) == 1
