"""An OpenAI chat body as an Anthropic Messages request, parameter by parameter as litellm 1.106.0 maps it.

Parameters are read in the order litellm reads them, because later ones may override earlier ones
(a client's tool_choice replaces the one a json_schema response format forces). An OpenAI parameter
Anthropic has no use for (seed, n > 1, logprobs, penalties, …) is refused with a 400, as litellm
refuses it; fields that are not OpenAI chat parameters at all are left out, as the litellm path
leaves them out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from switchboard.errors import BadRequest
from switchboard.upstream.adapters import (
    anthropic_media,
    anthropic_messages,
    anthropic_schema,
    anthropic_tools,
)
from switchboard.upstream.adapters.anthropic_models import ModelTraits, traits

JSON_TOOL = "json_tool_call"  # litellm's forced tool for a json_schema the model cannot take natively
DEFAULT_MAX_TOKENS = (
    4096  # added to a thinking budget when the client sets no cap (litellm's DEFAULT_MAX_TOKENS)
)
MIN_THINKING_BUDGET = 1024
BUDGETS = {"minimal": 1024, "low": 1024, "medium": 2048, "high": 4096, "xhigh": 8192, "max": 16384}
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "max"}
STRUCTURED_OUTPUTS_BETA = "structured-outputs-2025-11-13"
# The OpenAI chat parameters, in the order litellm's get_optional_params lists them.
# fmt: off
OPENAI_PARAMS = (
    "functions", "function_call", "temperature", "top_p", "n", "stop", "max_tokens", "max_completion_tokens",
    "modalities", "prediction", "audio", "presence_penalty", "frequency_penalty", "logit_bias", "user",
    "response_format", "seed", "tools", "tool_choice", "logprobs", "top_logprobs", "parallel_tool_calls",
    "reasoning_effort", "verbosity", "service_tier", "thinking", "web_search_options",
)
# fmt: on
# fmt: off
SUPPORTED = frozenset((
    "temperature", "top_p", "stop", "max_tokens", "max_completion_tokens", "user", "response_format", "tools",
    "tool_choice", "parallel_tool_calls", "web_search_options",
))
# fmt: on
_EMAIL = re.compile(r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$")
_PHONE = re.compile(r"^\+?[\d\s\(\)-]{7,}$")


@dataclass(frozen=True)
class ReplyContext:
    """What the answer's codecs need from the request."""

    json_mode: bool = False  # a json_tool_call answer is the JSON content, finish_reason stop
    tool_names: Mapping[str, str] = field(default_factory=dict)  # name sent → client's name


# For a relay that does not hand the context back: a json_tool_call is then taken for the JSON answer
# it nearly always is (no client tool has that name), and renamed tools keep their Anthropic names.
UNKNOWN_CONTEXT = ReplyContext(json_mode=True)


@dataclass
class _Built:
    params: dict[str, Any] = field(default_factory=dict)
    betas: list[str] = field(default_factory=list)
    json_mode: bool = False


def build(model: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[str], ReplyContext]:
    """(Anthropic request body without `stream`, anthropic-beta values, reply context)."""
    model_traits = traits(model)
    given = {key: value for key in OPENAI_PARAMS if (value := body.get(key)) is not None}
    _refuse_unsupported(model, model_traits, given)
    built = _Built()
    out = built.params
    for key, value in given.items():
        _map_param(key, value, given, model, model_traits, built)
    thinking = out.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    uncapped = "max_tokens" not in given and "max_completion_tokens" not in given
    if uncapped and budget is not None and isinstance(thinking, dict) and thinking.get("type") == "enabled":
        out["max_tokens"] = budget + DEFAULT_MAX_TOKENS  # Anthropic wants max_tokens above the budget

    messages = body.get("messages")
    if (
        "tools" not in out
        and isinstance(messages, list)
        and any(isinstance(m, dict) and m.get("tool_calls") is not None for m in messages)
    ):
        out["tools"] = anthropic_tools.tools([anthropic_tools.DUMMY_TOOL])  # tool_use needs tools
    if model_traits.thinking_always_on and isinstance(thinking, dict) and thinking.get("type") == "disabled":
        del out["thinking"]
    renamed = anthropic_tools.safe_names(out.get("tools") or [])
    if renamed:
        out["tools"] = list(out["tools"])
        anthropic_tools.rename(out["tools"], out.get("tool_choice"), renamed)
    system, converted = anthropic_messages.convert(messages, renamed)
    if "tool_choice" in out and not out.get("tools"):
        del out["tool_choice"]  # Anthropic refuses a tool_choice without tools (litellm sends it)
    out.setdefault("max_tokens", model_traits.max_output)
    request = {"model": model, "messages": converted, **out}
    if system:
        request["system"] = system
    _check_effort(model, model_traits, out.get("output_config"))
    return request, _betas(built, messages), ReplyContext(built.json_mode, {v: k for k, v in renamed.items()})


def _refuse_unsupported(model: str, model_traits: ModelTraits, given: Mapping[str, Any]) -> None:
    allowed = SUPPORTED | {"thinking", "reasoning_effort"} if model_traits.reasoning else SUPPORTED
    refused = [key for key, value in given.items() if key not in allowed and not (key == "n" and value == 1)]
    if refused:
        listed = ", ".join(refused)
        raise BadRequest(
            f"anthropic does not support parameters: {listed}, for model={model}", param=refused[0]
        )


def _map_param(
    key: str, value: Any, given: Mapping[str, Any], model: str, model_traits: ModelTraits, built: _Built
) -> None:
    out = built.params
    if key in ("max_tokens", "max_completion_tokens"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadRequest(f"{key} must be a number", param=key)
        out["max_tokens"] = value if isinstance(value, int) else max(1, round(value))
    elif key in ("temperature", "top_p"):
        if not model_traits.sampling and not (key == "temperature" and value == 1):
            raise BadRequest(f"{model} does not support {key}={value}", param=key)
        out[key] = value
    elif key == "stop":
        stops = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
        if stops:
            out["stop_sequences"] = stops
    elif key == "user":
        if isinstance(value, str) and not _EMAIL.match(value) and not _PHONE.match(value):
            out["metadata"] = {"user_id": value}  # Anthropic refuses ids that look like contact details
    elif key == "response_format" and isinstance(value, dict):
        _response_format(value, given, model_traits, built)
    elif key == "tools":
        out["tools"] = [*out.get("tools", []), *anthropic_tools.tools(value)]
    elif key in ("tool_choice", "parallel_tool_calls"):
        choice = anthropic_tools.tool_choice(given.get("tool_choice"), given.get("parallel_tool_calls"))
        if choice is not None:
            if choice["type"] in ("any", "tool") and not model_traits.forced_tool_use:
                raise BadRequest(f"{model} does not support forced tool use", param="tool_choice")
            out["tool_choice"] = choice
    elif key == "reasoning_effort":
        _reasoning_effort(value, model_traits, out)
    elif key == "thinking":
        _thinking(value, given, model_traits, out)
    elif key == "web_search_options" and isinstance(value, dict):
        out["tools"] = [*out.get("tools", []), anthropic_tools.web_search(value)]


def _response_format(
    value: Mapping[str, Any], given: Mapping[str, Any], model_traits: ModelTraits, built: _Built
) -> None:
    """json_schema → structured outputs (`output_format`) where the model has them, else a forced
    tool whose input is the answer. json_object sends nothing: Anthropic has no such mode."""
    schema = _schema_of(value)
    out = built.params
    if model_traits.native_json_schema:
        if schema is not None:
            out["output_format"] = {"type": "json_schema", "schema": anthropic_schema.output_schema(schema)}
        built.json_mode = True
        return
    if value.get("type") == "text" or schema is None:
        return
    thinking = given.get("thinking")
    thinking_on = thinking is True or (isinstance(thinking, dict) and thinking.get("type") == "enabled")
    if not thinking_on and given.get("reasoning_effort") is None and model_traits.forced_tool_use:
        out["tool_choice"] = {"name": JSON_TOOL, "type": "tool"}
    out["tools"] = [*out.get("tools", []), {"name": JSON_TOOL, "input_schema": {"type": "object", **schema}}]
    built.json_mode = True


def _schema_of(value: Mapping[str, Any]) -> dict[str, Any] | None:
    if "response_schema" in value:
        found = value["response_schema"]
    elif "json_schema" in value:
        inner = value["json_schema"]
        if not isinstance(inner, dict) or "schema" not in inner:
            raise BadRequest("response_format.json_schema needs a schema", param="response_format")
        found = inner["schema"]
    else:
        return None
    if found is not None and not isinstance(found, dict):
        raise BadRequest("response_format's schema must be an object", param="response_format")
    return found


def _reasoning_effort(value: Any, model_traits: ModelTraits, out: dict[str, Any]) -> None:
    effort = value.get("effort") if isinstance(value, dict) else value
    if not isinstance(effort, str):
        return
    if effort == "none":
        out.pop("thinking", None)
        out.pop("output_config", None)
    elif model_traits.adaptive_thinking:
        if effort not in EFFORTS:
            raise BadRequest(f"Invalid reasoning_effort: {effort!r}", param="reasoning_effort")
        # Without display, adaptive thinking answers with a blank thinking block.
        out["thinking"] = {"type": "adaptive", "display": "summarized"}
        out["output_config"] = {"effort": EFFORTS[effort]}
    elif effort in BUDGETS:
        out["thinking"] = {"type": "enabled", "budget_tokens": BUDGETS[effort]}
    else:
        raise BadRequest(f"Unmapped reasoning effort: {effort!r}", param="reasoning_effort")


def _thinking(value: Any, given: Mapping[str, Any], model_traits: ModelTraits, out: dict[str, Any]) -> None:
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "adaptive" and not model_traits.adaptive_thinking:
        # Older models only know budgets: litellm sends its medium budget, below the output cap.
        cap = given.get("max_completion_tokens") or given.get("max_tokens")
        budget = BUDGETS["medium"]
        if isinstance(cap, int | float) and cap <= MIN_THINKING_BUDGET:
            out.pop("thinking", None)
            return
        if isinstance(cap, int | float) and budget >= cap:
            budget = int(cap) - 1
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return
    out["thinking"] = value
    if kind == "enabled" and model_traits.adaptive_thinking and not model_traits.legacy_thinking:
        # 4.7 and later refuse budgets: the budget becomes the nearest effort.
        budget = int(value.get("budget_tokens") or 0)
        effort = (
            "xhigh"
            if budget >= BUDGETS["xhigh"] and model_traits.effort_xhigh
            else "high"
            if budget >= BUDGETS["high"]
            else "medium"
            if budget >= BUDGETS["medium"]
            else "low"
        )
        display = value.get("display")
        out["thinking"] = (
            {"type": "adaptive", "display": display}
            if display in ("summarized", "omitted")
            else {"type": "adaptive"}
        )
        existing = out.get("output_config")
        out["output_config"] = {"effort": effort, **(existing if isinstance(existing, dict) else {})}


def _check_effort(model: str, model_traits: ModelTraits, config: object) -> None:
    effort = config.get("effort") if isinstance(config, dict) else None
    if effort is None:
        return
    if effort not in ("high", "medium", "low", "xhigh", "max"):
        raise BadRequest(f"Invalid effort value: {effort!r}", param="reasoning_effort")
    if (effort == "max" and not model_traits.effort_max) or (
        effort == "xhigh" and not model_traits.effort_xhigh
    ):
        raise BadRequest(
            f"effort={effort!r} is not supported by this model. Got model: {model}", param="reasoning_effort"
        )


def _betas(built: _Built, messages: object) -> list[str]:
    out = built.params
    betas: list[str] = []
    if anthropic_media.uses_file_ids(messages):
        betas.append("files-api-2025-04-14")
    for tool in out.get("tools") or []:
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(kind, str):
            continue
        if kind == "code_execution_20250825":
            betas.append("code-execution-2025-08-25")
        elif kind.startswith("web_fetch"):
            betas.append("web-fetch-2025-09-10")
        elif kind.startswith("memory"):
            betas.append("context-management-2025-06-27")
    thinking = out.get("thinking")
    if (
        isinstance(thinking, dict)
        and thinking.get("type") in ("adaptive", "enabled")
        and thinking.get("display") == "updates"
    ):
        betas.append("thinking-display-updates-2026-08-18")
    config = out.get("output_config")
    if "output_format" in out or (isinstance(config, dict) and config.get("format") is not None):
        betas.append(STRUCTURED_OUTPUTS_BETA)
    return list(dict.fromkeys(betas))
