"""Gemini's generateContent / streamGenerateContent (alt=sse) and embedding wire format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from tests.fakes.openai_wire import vector
from tests.fakes.script import Script


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\r\n\r\n"  # Google ends events with CRLF pairs


def _tool_name(body: dict[str, Any]) -> str | None:
    for tool in body.get("tools") or []:
        declarations = tool.get("functionDeclarations") or tool.get("function_declarations") or []
        if declarations:
            return str(declarations[0].get("name") or "tool")
    return None


def usage(script: Script, final: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"promptTokenCount": script.prompt_tokens}
    if final:
        # candidatesTokenCount excludes thinking tokens, which Gemini reports apart.
        meta["candidatesTokenCount"] = script.completion_tokens - script.reasoning_tokens
        if script.reasoning_tokens:
            meta["thoughtsTokenCount"] = script.reasoning_tokens
    if script.cached_tokens:
        meta["cachedContentTokenCount"] = script.cached_tokens
    meta["totalTokenCount"] = script.prompt_tokens + (script.completion_tokens if final else 0)
    return meta


def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return candidate


def content_body(script: Script, body: dict[str, Any], model: str, response_id: str) -> dict[str, Any]:
    tool = _tool_name(body)
    part: dict[str, Any] = {"text": script.reply}
    if tool is not None:
        part = {"functionCall": {"name": tool, "args": orjson.loads(script.tool_arguments)}}
    return {
        "candidates": [_candidate([part], "STOP")],
        "usageMetadata": usage(script),
        "modelVersion": model,
        "responseId": response_id,
    }


def content_events(script: Script, body: dict[str, Any], model: str, response_id: str) -> Iterator[bytes]:
    """One event per piece carrying the prompt count; the last adds finishReason and full usage."""
    tail = (
        {"modelVersion": model, "responseId": response_id} if script.response_ids else {"modelVersion": model}
    )
    tool = _tool_name(body)
    if tool is not None:
        part = {"functionCall": {"name": tool, "args": orjson.loads(script.tool_arguments)}}
        yield sse({"candidates": [_candidate([part], "STOP")], "usageMetadata": usage(script), **tail})
        return
    pending: str | None = None
    for piece in script.pieces():
        if pending is not None:
            yield sse(
                {
                    "candidates": [_candidate([{"text": pending}], None)],
                    "usageMetadata": usage(script, final=False),
                    **tail,
                }
            )
        pending = piece
    yield sse(
        {
            "candidates": [_candidate([{"text": pending or ""}], "STOP")],
            "usageMetadata": usage(script),
            **tail,
        }
    )


def embed_body(script: Script, body: dict[str, Any], batch: bool) -> dict[str, Any]:
    def values(request: dict[str, Any]) -> dict[str, Any]:
        parts = (request.get("content") or {}).get("parts") or []
        text = "".join(str(part.get("text", "")) for part in parts)
        return {"values": vector(text, script.embedding_dims)}

    if batch:
        return {"embeddings": [values(request) for request in body.get("requests") or []]}
    return {"embedding": values(body)}


def error(script: Script, api_key: str | None) -> tuple[int, dict[str, Any]]:
    kinds: dict[str, tuple[int, str, str]] = {
        "rate_limit": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        "invalid_key": (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
        "unauthorized": (401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
        "forbidden": (403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."),
        "server_error": (500, "INTERNAL", "An internal error has occurred."),
        "bad_request": (400, "INVALID_ARGUMENT", "Invalid JSON payload received."),
        "echo_key": (400, "INVALID_ARGUMENT", f"API key {api_key} is not enabled for this model."),
    }
    fail = script.fail or "server_error"
    status, state, message = kinds[fail]
    payload: dict[str, Any] = {
        "code": script.status or status,
        "message": script.message or message,
        "status": state,
    }
    if fail == "invalid_key":
        payload["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ]
    return script.status or status, {"error": payload}


# --- Builders for answers given whole (Script.answer / Script.answer_events) ---------------------


def text_part(text: str, *, thought: bool = False, signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": text}
    if thought:
        part["thought"] = True
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def call_part(
    name: str, args: dict[str, Any], *, signature: str | None = None, call_id: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    part: dict[str, Any] = {"functionCall": call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def usage_metadata(
    prompt: int, candidates: int | None = None, *, thoughts: int = 0, cached: int = 0
) -> dict[str, Any]:
    """Gemini's usageMetadata; `candidates` None for the early stream events that count the prompt only."""
    meta: dict[str, Any] = {"promptTokenCount": prompt}
    if candidates is not None:
        meta["candidatesTokenCount"] = candidates
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if cached:
        meta["cachedContentTokenCount"] = cached
    meta["totalTokenCount"] = prompt + (candidates or 0) + thoughts
    return meta


def response(
    parts: list[dict[str, Any]] | None,
    *,
    finish: str | None = "STOP",
    usage: dict[str, Any] | None = None,
    response_id: str | None = None,
    model_version: str | None = None,
) -> dict[str, Any]:
    """One GenerateContentResponse: a whole answer, or one stream event."""
    payload: dict[str, Any] = {}
    if parts is not None or finish is not None:
        candidate: dict[str, Any] = {"index": 0}
        if parts is not None:
            candidate["content"] = {"parts": parts, "role": "model"}
        if finish is not None:
            candidate["finishReason"] = finish
        payload["candidates"] = [candidate]
    if usage is not None:
        payload["usageMetadata"] = usage
    if model_version is not None:
        payload["modelVersion"] = model_version
    if response_id is not None:
        payload["responseId"] = response_id
    return payload
