"""Gemini's generateContent answer as an OpenAI chat.completion, making litellm 1.106.0's choices."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import orjson

from switchboard.errors import SwitchboardError, UpstreamFailed
from switchboard.upstream import provider_errors
from switchboard.upstream.types import Usage

SIGNATURE_SEPARATOR = "__thought__"
# finishReason → finish_reason (litellm's map; anything unknown is "stop").
FINISH = {
    "STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter", "RECITATION": "content_filter",
    "FINISH_REASON_UNSPECIFIED": "stop", "MALFORMED_FUNCTION_CALL": "stop", "LANGUAGE": "content_filter",
    "OTHER": "content_filter", "BLOCKLIST": "content_filter", "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter", "IMAGE_SAFETY": "content_filter", "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "TOO_MANY_TOOL_CALLS": "stop", "MALFORMED_RESPONSE": "stop", "NO_IMAGE": "content_filter",
    "IMAGE_RECITATION": "content_filter", "IMAGE_OTHER": "content_filter", "ESCALATION": "content_filter",
    "UNEXPECTED_TOOL_CALL": "stop", "MISSING_THOUGHT_SIGNATURE": "stop",
}  # fmt: skip
# Finish reasons after which litellm withholds the candidate's text (a non-streamed answer only).
FLAGGED = frozenset(
    (
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
    )
)


def load(data: bytes) -> dict[str, Any]:
    """A provider answer or event as a dict; a 200 that is not one (HTML, not an object) is a failure."""
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise UpstreamFailed("the provider answered 200 with a body that is not JSON") from None
    if not isinstance(payload, dict):
        raise UpstreamFailed("the provider answered 200 with a body that is not a JSON object")
    return payload


def in_band_error(payload: dict[str, Any]) -> SwitchboardError:
    """Gemini's `{"error": {"code", "message", "status"}}` inside a 200, as the gateway's error."""
    error = payload["error"]
    code = error.get("code") if isinstance(error, dict) else None
    status = code if isinstance(code, int) and 400 <= code <= 599 else 500
    return provider_errors.from_response(status, {}, orjson.dumps(payload), None)


def new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(14)  # 28 hex digits, as litellm's ids


def served_model(payload: dict[str, Any], model: str) -> str:
    """The model Gemini says answered (`modelVersion`, as litellm reports it), else the one asked."""
    version = payload.get("modelVersion")
    return version.split("@", 1)[0] if isinstance(version, str) and version else model


def usage_of(meta: Any, candidates: Any = None) -> Usage | None:
    """usageMetadata as Usage: prompt includes cached tokens, completion includes thoughts."""
    if not isinstance(meta, dict):
        return None
    prompt = _count(meta, "promptTokenCount")
    candidates_count = _count(meta, "candidatesTokenCount")
    thoughts = _count(meta, "thoughtsTokenCount")
    tool_use = _count(meta, "toolUsePromptTokenCount")
    completion = candidates_count
    # Some answers count thoughts inside candidatesTokenCount already: then the total says so.
    if thoughts and prompt + candidates_count + tool_use != _count(meta, "totalTokenCount"):
        completion += thoughts
    if tool_use and _searched(candidates):
        tool_use = 0  # Google bills search grounding per query, not its retrieved tokens
    return Usage(
        prompt_tokens=prompt + tool_use,
        completion_tokens=completion,
        cached_tokens=_count(meta, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _count(meta: dict[str, Any], key: str) -> int:
    value = meta.get(key)
    return value if isinstance(value, int) else 0


def _searched(candidates: Any) -> bool:
    for candidate in candidates if isinstance(candidates, list) else ():
        grounding = candidate.get("groundingMetadata") if isinstance(candidate, dict) else None
        if isinstance(grounding, dict) and (
            grounding.get("webSearchQueries")
            or any(isinstance(c, dict) and "maps" in c for c in grounding.get("groundingChunks") or ())
        ):
            return True
    return False


def finish_reason(native: Any, called: bool) -> str:
    if called:
        return "tool_calls"
    return FINISH.get(native, "stop") if isinstance(native, str) else "stop"


def read_parts(parts: Any, first_index: int) -> tuple[str | None, str | None, list[dict[str, Any]]]:
    """A candidate's parts as (content, reasoning_content, tool_calls), None where there is none."""
    content: str | None = None
    reasoning: str | None = None
    calls: list[dict[str, Any]] = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        text = part.get("text")
        if isinstance(text, str):
            if text.startswith("data:audio") and ";base64," in text:
                continue  # audio, which litellm answers apart
        elif "inlineData" in part:
            inline = part["inlineData"] if isinstance(part["inlineData"], dict) else {}
            mime = str(inline.get("mimeType", ""))
            if mime.startswith(("audio/", "image/")):
                continue
            text = f"data:{mime};base64,{inline.get('data', '')}"
        elif "functionCall" in part:
            calls.append(tool_call(part, first_index + len(calls)))
            continue
        if text:
            if part.get("thought") is True:
                reasoning = text if reasoning is None else reasoning + text
            else:
                content = text if content is None else content + text
    return content, reasoning, calls


def tool_call(part: dict[str, Any], index: int) -> dict[str, Any]:
    """A functionCall part as an OpenAI tool call. Its id is Gemini's own (Gemini 3) or a new one; a
    thought signature rides along after `__thought__`, for the client to hand back (as litellm)."""
    invoke = part["functionCall"] if isinstance(part["functionCall"], dict) else {}
    call_id = invoke.get("id") or new_id("call_")
    call: dict[str, Any] = {
        "id": call_id,
        "type": "function",
        "function": {
            "name": invoke.get("name") or "",
            # json.dumps, not orjson: byte for byte the arguments litellm would give
            "arguments": json.dumps(invoke.get("args") or {}, ensure_ascii=False),
        },
        "index": index,
    }
    signature = part.get("thoughtSignature")
    if isinstance(signature, str) and signature:
        call["id"] = f"{call_id}{SIGNATURE_SEPARATOR}{signature}"
        call["provider_specific_fields"] = {"thought_signature": signature}
    return call


def logprobs(candidate: dict[str, Any]) -> dict[str, Any] | None:
    result = candidate.get("logprobsResult")
    if not isinstance(result, dict) or "chosenCandidates" not in result:
        return None
    top = result.get("topCandidates") or []
    tokens = []
    for index, chosen in enumerate(result["chosenCandidates"]):
        alternatives = top[index].get("candidates", []) if index < len(top) else []
        tokens.append(
            {
                "token": chosen.get("token"),
                "logprob": chosen.get("logProbability"),
                "top_logprobs": [
                    {"token": a.get("token"), "logprob": a.get("logProbability")} for a in alternatives
                ],
            }
        )
    return {"content": tokens}


def chat_reply(data: bytes, model: str) -> tuple[Usage | None, bytes]:
    payload = load(data)
    if "error" in payload:
        raise UpstreamFailed("the provider answered 200 with an error in the body")
    if "candidates" not in payload and "promptFeedback" not in payload:
        raise UpstreamFailed("the provider answered 200 without candidates")
    candidates = payload.get("candidates") or []
    usage = usage_of(payload.get("usageMetadata"), candidates)
    feedback = payload.get("promptFeedback")
    blocked = isinstance(feedback, dict) and "blockReason" in feedback
    if blocked or (
        candidates and isinstance(candidates[0], dict) and candidates[0].get("finishReason") in FLAGGED
    ):
        # A blocked prompt or a flagged answer: litellm withholds whatever text came with it.
        choices: list[dict[str, Any]] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None},
                "logprobs": None,
                "finish_reason": "content_filter",
            }
        ]
    else:
        choices = [
            _choice(candidate, index) for index, candidate in enumerate(candidates) if _answers(candidate)
        ]
    body: dict[str, Any] = {
        "id": payload.get("responseId") or new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served_model(payload, model),
        "system_fingerprint": None,
        "choices": choices,
    }
    if usage is not None:
        body["usage"] = usage.to_openai()
    return usage, orjson.dumps(body)


def _answers(candidate: Any) -> bool:
    return isinstance(candidate, dict) and ("content" in candidate or "finishReason" in candidate)


def _choice(candidate: dict[str, Any], index: int) -> dict[str, Any]:
    content_obj = candidate.get("content")
    parts = content_obj.get("parts") if isinstance(content_obj, dict) else None
    content, reasoning, calls = read_parts(parts, 0)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    return {
        "index": candidate.get("index", index),
        "message": message,
        "logprobs": logprobs(candidate),
        "finish_reason": finish_reason(candidate.get("finishReason"), bool(calls)),
    }
