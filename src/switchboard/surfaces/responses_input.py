"""A Responses API `input` (and `instructions`) as chat completion messages.

Items: messages (easy or typed, any role), `function_call` (joined onto the assistant message before
it, as chat carries a turn's tool calls), `function_call_output` (a `tool` message). `reasoning`
items a client echoes back are dropped: another provider's reasoning cannot be replayed, and the
translation keeps no state to look it up. Items that point at stored state are refused.
"""

from __future__ import annotations

from typing import Any

from switchboard.errors import BadRequest

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = ("input_text", "output_text", "text")


def _unsupported(message: str, param: str = "input") -> BadRequest:
    return BadRequest(message, param=param, openai_code="unsupported_parameter")


def _text(content: Any, where: str) -> str:
    """A content that chat carries as plain text (system, assistant and tool messages)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{where}: `content` must be a string or an array of parts", param="input")
    texts: list[str] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        else:
            raise _unsupported(f"{where}: a part of type {kind!r} can only be text here")
    return "".join(texts)


def _user_part(part: Any) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image: dict[str, Any] = {"url": part["image_url"]}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file" and isinstance(part.get("file_data"), str):
        file = {key: part[key] for key in ("file_data", "filename") if isinstance(part.get(key), str)}
        return {"type": "file", "file": file}
    if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
        return {"type": "input_audio", "input_audio": part["input_audio"]}
    if kind in ("input_image", "input_file"):
        raise _unsupported(
            f"a {kind} part must carry its data (image_url, file_data): uploaded file ids live on OpenAI"
        )
    raise _unsupported(f"an input part of type {kind!r} cannot be translated for this model's provider")


def _message(item: dict[str, Any], index: int) -> dict[str, Any]:
    where = f"input[{index}]"
    role = _ROLES.get(str(item.get("role")))
    if role is None:
        raise BadRequest(f"{where}: `role` must be user, assistant, system or developer", param="input")
    content = item.get("content")
    if role != "user":
        return {"role": role, "content": _text(content, where)}
    if isinstance(content, str):
        return {"role": "user", "content": content}
    if not isinstance(content, list):
        raise BadRequest(f"{where}: `content` must be a string or an array of parts", param="input")
    return {"role": "user", "content": [_user_part(part) for part in content]}


def _tool_call(item: dict[str, Any], index: int) -> dict[str, Any]:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
        raise BadRequest(
            f"input[{index}]: a function_call needs `call_id`, `name` and `arguments` strings", param="input"
        )
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _tool_output(item: dict[str, Any], index: int) -> dict[str, Any]:
    call_id, output = item.get("call_id"), item.get("output")
    if not isinstance(call_id, str):
        raise BadRequest(f"input[{index}]: a function_call_output needs a `call_id`", param="input")
    return {"role": "tool", "tool_call_id": call_id, "content": _text(output, f"input[{index}].output")}


def _add(messages: list[dict[str, Any]], item: Any, index: int) -> None:
    if not isinstance(item, dict):
        raise BadRequest(f"input[{index}] must be an object", param="input")
    kind = item.get("type") or ("message" if "role" in item else None)
    if kind == "message":
        messages.append(_message(item, index))
    elif kind == "function_call":
        call = _tool_call(item, index)
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
            last["content"] = last["content"] or None  # an empty text block is refused by some providers
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        messages.append(_tool_output(item, index))
    elif kind == "reasoning":
        return
    elif kind == "item_reference":
        raise _unsupported(
            "item references need stored responses; this model's provider is reached by translation, "
            "which keeps no state: send the items themselves"
        )
    else:
        raise _unsupported(f"input items of type {kind!r} cannot be translated for this model's provider")


def chat_messages(value: Any, instructions: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if instructions is not None:
        if not isinstance(instructions, str):
            raise BadRequest("`instructions` must be a string", param="instructions")
        if instructions:
            messages.append({"role": "system", "content": instructions})
    if isinstance(value, str):
        messages.append({"role": "user", "content": value})
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _add(messages, item, index)
    if not any(message["role"] != "system" for message in messages):
        raise BadRequest("`input` must hold at least one message", param="input")
    return messages
