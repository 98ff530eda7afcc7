"""An OpenAI chat body as a Gemini generateContent body, making litellm 1.106.0's choices.

Parameters Gemini has no counterpart for (logit_bias, top_logprobs, audio, prediction, verbosity,
function_call, and reasoning on a model without it) are refused with 400, as litellm refuses them;
`user` and `parallel_tool_calls` are dropped, as litellm drops them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from switchboard.errors import BadRequest
from switchboard.upstream.adapters.gemini_messages import turns
from switchboard.upstream.adapters.gemini_schema import gemini_schema, without_openai_flags

REFUSED = frozenset(("logit_bias", "top_logprobs", "audio", "prediction", "verbosity", "function_call"))
EFFORTS = ("minimal", "low", "medium", "high", "none", "disable")
BUDGETS = {"low": 1024, "medium": 2048, "high": 4096}  # reasoning_effort → thinkingBudget (Gemini 2.5)
TOOL_CHOICES = {"none": "NONE", "required": "ANY", "auto": "AUTO"}
MODALITIES = {"text": "TEXT", "image": "IMAGE", "audio": "AUDIO", "video": "VIDEO"}
# Gemini's own tools, given in its shape ({"googleSearch": {}}), under either spelling.
NATIVE_TOOLS = {
    "googleSearch": "googleSearch", "google_search": "googleSearch",
    "googleSearchRetrieval": "googleSearchRetrieval", "google_search_retrieval": "googleSearchRetrieval",
    "enterpriseWebSearch": "enterpriseWebSearch", "enterprise_web_search": "enterpriseWebSearch",
    "urlContext": "urlContext", "url_context": "urlContext",
    "codeExecution": "codeExecution", "code_execution": "codeExecution",
}  # fmt: skip
SEARCH_TOOLS = ("googleSearch", "googleSearchRetrieval", "enterpriseWebSearch", "urlContext")
TOOL_CACHE_SIZE = 256
TOOL_CACHE_MAX_KEY = 64 * 1024  # larger tool lists are converted each time rather than kept
_BEFORE_GEMINI_3 = re.compile(r"^gemini-(?:[12](?:\.\d+)?|exp|(?:pro|flash)(?!-(?:lite-)?latest$))(?:-|$)")
_GEMINI_2_OR_LATER = re.compile(r"gemini-(?:[2-9]|[1-9]\d+)(?:\.|\-)")


class Traits(NamedTuple):
    """What litellm decides from the model's name."""

    gemini_3: bool  # Gemini 3 or later: thinkingLevel, call ids, temperature 1 unless asked
    json_schema: bool  # takes responseJsonSchema (else the OpenAPI responseSchema)
    system_instruction: bool  # takes a system instruction (Gemma 2 and 3 do not)
    reasoning: bool  # takes reasoning_effort / thinking
    penalties: bool  # takes presence and frequency penalties
    minimal_budget: int  # reasoning_effort "minimal" as a thinkingBudget
    minimal_level: bool  # reasoning_effort "minimal" as thinkingLevel "minimal" (else "low")


@lru_cache(maxsize=256)
def traits(model: str) -> Traits:
    name = model.split("/")[-1].lower()
    gemini_3 = bool(name) and not name.isdigit() and not name.startswith("gemma-")
    gemini_3 = gemini_3 and not _BEFORE_GEMINI_3.match(name)
    if "gemini-2.5-flash-lite" in name:
        minimal = 512
    elif "gemini-2.5-pro" in name:
        minimal = 128
    elif "gemini-2.5-flash" in name:
        minimal = 1
    else:
        minimal = 128
    return Traits(
        gemini_3=gemini_3,
        json_schema=bool(_GEMINI_2_OR_LATER.search(name)),
        system_instruction="gemma-2" not in name and "gemma-3" not in name,
        reasoning=gemini_3 or "gemini-2.5" in name or name.startswith("gemma-4"),
        penalties=not gemini_3 and name != "gemini-2.5-pro-preview-06-05",
        minimal_budget=minimal,
        minimal_level=gemini_3 and "flash" in name,
    )


def request_body(model: str, body: dict[str, Any]) -> dict[str, Any]:
    """The Gemini request for an OpenAI chat body; BadRequest for what cannot be asked of Gemini."""
    trait = traits(model)
    system, contents = turns(
        body.get("messages"), system_instruction=trait.system_instruction, gemini_3=trait.gemini_3
    )
    request: dict[str, Any] = {"contents": contents}
    if system is not None:
        request["systemInstruction"] = system
    config: dict[str, Any] = {}
    tools: list[dict[str, Any]] = []
    for key, value in body.items():
        if value is None:
            continue
        if key in REFUSED or (key in ("reasoning_effort", "thinking") and not trait.reasoning):
            raise BadRequest(f"gemini does not support parameters: [{key!r}], for model={model}", param=key)
        if key == "temperature":
            config["temperature"] = value
        elif key == "top_p":
            config["topP"] = value
        elif key == "n":
            config["candidateCount"] = value
        elif key == "stop":
            if isinstance(value, str):
                config["stopSequences"] = [value]
            elif isinstance(value, list):
                config["stopSequences"] = value
        elif key in ("max_tokens", "max_completion_tokens"):
            config["maxOutputTokens"] = value
        elif key in ("presence_penalty", "frequency_penalty"):
            if trait.penalties:
                config["presencePenalty" if key == "presence_penalty" else "frequencyPenalty"] = value
        elif key == "seed":
            config["seed"] = value
        elif key == "logprobs":
            config["responseLogprobs"] = value
        elif key == "response_format" and isinstance(value, dict):
            _response_format(value, config, trait)
        elif key in ("tools", "functions") and isinstance(value, list) and value:
            tools.extend(_tools(value))
        elif key == "web_search_options" and isinstance(value, dict):
            tools.append({"googleSearch": {}})
        elif key == "tool_choice" and isinstance(value, str | dict):
            request["toolConfig"] = {"functionCallingConfig": _tool_choice(value)}
        elif key == "reasoning_effort":
            effort = value.get("effort") if isinstance(value, dict) else value
            if effort is not None:
                _check_no_thinking_level(config, key)
                config["thinkingConfig"] = _effort(effort, trait)
        elif key == "thinking" and isinstance(value, dict):
            _check_no_thinking_level(config, key)
            config["thinkingConfig"] = _thinking(value, trait)
        elif key == "modalities" and isinstance(value, list):
            config["responseModalities"] = [MODALITIES.get(m, "MODALITY_UNSPECIFIED") for m in value]
        elif key == "service_tier" and isinstance(value, str):
            tier = "priority" if value.lower() == "auto" else value.lower()
            request["serviceTier"] = "standard" if tier == "default" else tier
    if trait.gemini_3 and "temperature" not in config:
        config["temperature"] = 1.0  # litellm's default for Gemini 3
    if tools:
        if any("functionDeclarations" in tool for tool in tools):
            # Gemini refuses search tools beside function declarations: the functions win.
            tools = [tool for tool in tools if not any(name in tool for name in SEARCH_TOOLS)]
        request["tools"] = tools
    resolution = _media_resolution(body.get("messages")) if "gemini-2" in model else None
    if resolution is not None:
        config["mediaResolution"] = resolution
    if config:
        request["generationConfig"] = config
    return request


def _tools(value: list[Any]) -> list[dict[str, Any]]:
    """OpenAI tools as Gemini's: the function declarations in one Tool, then each native tool."""
    try:
        key = orjson.dumps(value)
    except orjson.JSONEncodeError:
        raise BadRequest("tools cannot be encoded as JSON", param="tools") from None
    cached = _TOOLS.get(key)
    if cached is None:
        cached = _convert_tools(value)
        if len(key) <= TOOL_CACHE_MAX_KEY:
            if len(_TOOLS) >= TOOL_CACHE_SIZE:
                _TOOLS.clear()
            _TOOLS[key] = cached
    return list(cached)


_TOOLS: dict[bytes, tuple[dict[str, Any], ...]] = {}  # a client sends the same tools call after call


def _convert_tools(value: list[Any]) -> tuple[dict[str, Any], ...]:
    declarations: list[dict[str, Any]] = []
    natives: dict[str, Any] = {}
    for tool in without_openai_flags(value):
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type")
        if kind in ("web_search", "web_search_preview"):
            natives["googleSearch"] = {}
            continue
        rest = [key for key in tool if key != "type"]
        if len(rest) == 1 and rest[0] in NATIVE_TOOLS and tool[rest[0]] is not None:
            natives[NATIVE_TOOLS[rest[0]]] = tool[rest[0]]
            continue
        function = tool.get("function") if "function" in tool else (tool if "name" in tool else None)
        if not isinstance(function, dict):
            continue
        declaration: dict[str, Any] = {"name": function.get("name")}
        if function.get("description") is not None:
            declaration["description"] = function["description"]
        parameters = function.get("parameters")
        if parameters == "":
            parameters = {"type": "object"}
        elif isinstance(parameters, dict) and "function" in tool:
            parameters = gemini_schema(parameters)
        if parameters is not None:
            declaration["parameters"] = parameters
        declarations.append(declaration)
    tools: list[dict[str, Any]] = [{"functionDeclarations": declarations}] if declarations else []
    # One Tool per native kind, in litellm's order.
    for name in (
        "googleSearch",
        "googleSearchRetrieval",
        "enterpriseWebSearch",
        "codeExecution",
        "urlContext",
    ):
        if name in natives:
            tools.append({name: natives[name]})
    return tuple(tools)


def _tool_choice(value: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict):
        function = value.get("function")
        name = function.get("name", "") if isinstance(function, dict) else ""
        return {"mode": "ANY", "allowedFunctionNames": [name]}
    mode = TOOL_CHOICES.get(value)
    if mode is None:
        raise BadRequest(f"gemini does not support tool_choice={value!r}", param="tool_choice")
    return {"mode": mode}


def _response_format(value: dict[str, Any], config: dict[str, Any], trait: Traits) -> None:
    value = without_openai_flags(value, additional_properties=not trait.json_schema, param="response_format")
    kind = value.get("type")
    if kind == "json_object":
        config["responseMimeType"] = "application/json"
    elif kind == "text":
        config["responseMimeType"] = "text/plain"
    schema = None
    if "response_schema" in value:
        config["responseMimeType"] = "application/json"
        schema = value["response_schema"]
    elif kind == "json_schema":
        inner = value.get("json_schema")
        if isinstance(inner, dict) and "schema" in inner:
            config["responseMimeType"] = "application/json"
            schema = inner["schema"]
    if schema and isinstance(schema, dict):
        if trait.json_schema:
            config["responseJsonSchema"] = schema
        else:
            config["responseSchema"] = gemini_schema(schema, property_ordering=True, param="response_format")


def _check_no_thinking_level(config: dict[str, Any], key: str) -> None:
    if "thinkingLevel" in config.get("thinkingConfig", {}):
        raise BadRequest(f"{key} cannot be given beside a thinking level", param=key)


def _effort(effort: Any, trait: Traits) -> dict[str, Any]:
    if trait.gemini_3:
        low = "minimal" if trait.minimal_level else "low"
        if effort in ("disable", "none"):
            return {"thinkingLevel": low, "includeThoughts": False}
        if effort in ("minimal", "low", "medium", "high"):
            return {"thinkingLevel": low if effort == "minimal" else effort, "includeThoughts": True}
    else:
        if effort in ("disable", "none"):
            return {"thinkingBudget": 0, "includeThoughts": False}
        if effort == "minimal":
            return {"thinkingBudget": trait.minimal_budget, "includeThoughts": True}
        if effort in BUDGETS:
            return {"thinkingBudget": BUDGETS[effort], "includeThoughts": True}
    raise BadRequest(
        f"Invalid `reasoning_effort`: {effort!r}. Must be one of: {', '.join(map(repr, EFFORTS))}",
        param="reasoning_effort",
    )


def _thinking(value: dict[str, Any], trait: Traits) -> dict[str, Any]:
    """Anthropic's `thinking` parameter, which litellm also maps for Gemini."""
    enabled = value.get("type") == "enabled"
    budget = value.get("budget_tokens")
    if trait.gemini_3:
        return {"includeThoughts": enabled and budget != 0}
    config: dict[str, Any] = {}
    if enabled and budget != 0:
        config["includeThoughts"] = True
    if isinstance(budget, int):
        config["thinkingBudget"] = budget
    return config


def _media_resolution(messages: Any) -> str | None:
    """Gemini 2 takes one media resolution for the request: the highest `detail` asked."""
    order = {"low": 1, "medium": 2, "high": 3, "ultra_high": 4}
    best: str | None = None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for item in content if isinstance(content, list) else ():
            holder = (
                item.get("image_url") if isinstance(item, dict) and item.get("type") == "image_url" else None
            )
            if isinstance(item, dict) and item.get("type") == "file":
                holder = item.get("file")
            detail = holder.get("detail") if isinstance(holder, dict) else None
            if isinstance(detail, str) and order.get(detail, 0) > order.get(best or "", 0):
                best = detail
    return f"MEDIA_RESOLUTION_{best.upper()}" if best else None
