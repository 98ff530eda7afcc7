"""A Responses API request (`POST /v1/responses`) checked, and rewritten as a chat completion request
for providers that do not speak the Responses API (SPEC §16).

The translation is stateless: nothing is stored, so what needs a stored response or conversation
(`previous_response_id`, `conversation`, `store: true`, `background`, item references) is refused
with the reason instead of being silently dropped.
"""

from __future__ import annotations

from typing import Any

from switchboard.errors import BadRequest
from switchboard.surfaces.responses_input import chat_messages

# Same name and meaning in both APIs.
_SHARED = ("temperature", "top_p", "user", "stream")
# Fields that need a response or conversation stored by the provider: a value other than these is refused.
_STATEFUL: dict[str, tuple[object, ...]] = {
    "previous_response_id": (None,),
    "conversation": (None,),
    "store": (None, False),
    "background": (None, False),
    "prompt": (None,),
}
_WHY_STATEFUL = (
    "this model's provider does not speak the Responses API, so Switchboard translates the call "
    "and keeps no state: send the whole conversation in `input`"
)


def check_responses_body(body: dict[str, Any]) -> bool:
    """What every call needs, whichever provider answers it; returns whether the call streams."""
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("`stream` must be a boolean", param="stream")
    cap = body.get("max_output_tokens")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise BadRequest("`max_output_tokens` must be a positive integer", param="max_output_tokens")
    value = body.get("input")
    if value is not None and not isinstance(value, str | list):
        raise BadRequest("`input` must be a string or an array of items", param="input")
    return bool(stream)


def from_agent(body: dict[str, Any]) -> dict[str, Any]:
    """An `agent:` selector's body back in the Responses shape. The agent adds its prompt as a chat
    system message, its output cap as `max_tokens` and its effort as `reasoning_effort`
    (agents/apply.py): here they are `instructions` (the agent's first), `max_output_tokens` and
    `reasoning.effort`, each where the caller set none."""
    new = {k: v for k, v in body.items() if k not in ("messages", "max_tokens", "reasoning_effort")}
    lead = [m.get("content") for m in body.get("messages") or () if isinstance(m, dict)]
    texts = [text for text in (*lead, body.get("instructions")) if isinstance(text, str) and text]
    if texts:
        new["instructions"] = "\n\n".join(texts)
    if body.get("max_output_tokens") is None and isinstance(body.get("max_tokens"), int):
        new["max_output_tokens"] = body["max_tokens"]
    reasoning = body.get("reasoning")
    effort = body.get("reasoning_effort")
    if effort is not None and not (isinstance(reasoning, dict) and reasoning.get("effort")):
        new["reasoning"] = {**(reasoning if isinstance(reasoning, dict) else {}), "effort": effort}
    return new


def _unsupported(message: str, param: str) -> BadRequest:
    return BadRequest(message, param=param, openai_code="unsupported_parameter")


def refuse_state(body: dict[str, Any]) -> None:
    """400 `unsupported_parameter` for what a stateless translation cannot honour."""
    for name, neutral in _STATEFUL.items():
        if body.get(name) not in neutral:
            raise _unsupported(f"`{name}` is not supported here: {_WHY_STATEFUL}", name)


def _tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else None
        raise _unsupported(
            f"only function tools can be translated for this model's provider, not {kind!r}", "tools"
        )
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("a function tool needs a `name`", param="tools")
    function: dict[str, Any] = {"name": name}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise _unsupported(
        "`tool_choice` must be auto, none, required or a function for this model's provider", "tool_choice"
    )


def _response_format(text: Any) -> dict[str, Any] | None:
    if text is None:
        return None
    if not isinstance(text, dict):
        raise BadRequest("`text` must be an object", param="text")
    fmt = text.get("format")
    if fmt is None or (isinstance(fmt, dict) and fmt.get("type") == "text"):
        return None
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        if not isinstance(fmt.get("name"), str) or not isinstance(fmt.get("schema"), dict):
            raise BadRequest("`text.format` json_schema needs a `name` and a `schema`", param="text.format")
        schema = {key: fmt[key] for key in ("name", "description", "schema", "strict") if key in fmt}
        return {"type": "json_schema", "json_schema": schema}
    raise BadRequest("`text.format.type` must be text, json_object or json_schema", param="text.format")


def _reasoning_effort(reasoning: Any) -> str | None:
    if reasoning is None:
        return None
    if not isinstance(reasoning, dict):
        raise BadRequest("`reasoning` must be an object", param="reasoning")
    effort = reasoning.get("effort")
    if effort is not None and not isinstance(effort, str):
        raise BadRequest("`reasoning.effort` must be a string", param="reasoning.effort")
    return effort


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion request that stands in for a Responses one.

    Fields with no chat meaning and no effect on the answer's content (`include`, `truncation`,
    `metadata`, `service_tier`, `text.verbosity`, `reasoning.summary`, …) are left behind.
    """
    refuse_state(body)
    messages = chat_messages(body.get("input"), body.get("instructions"))
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    for name in _SHARED:
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    tools = body.get("tools")
    if tools:
        if not isinstance(tools, list):
            raise BadRequest("`tools` must be an array", param="tools")
        chat["tools"] = [_tool(tool) for tool in tools]
        # Chat providers refuse `parallel_tool_calls` without tools; the Responses API does not.
        if body.get("parallel_tool_calls") is not None:
            chat["parallel_tool_calls"] = body["parallel_tool_calls"]
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    response_format = _response_format(body.get("text"))
    if response_format is not None:
        chat["response_format"] = response_format
    effort = _reasoning_effort(body.get("reasoning"))
    if effort is not None:
        chat["reasoning_effort"] = effort
    return chat
