"""OpenAI chat messages as Gemini `contents` and `systemInstruction`, making litellm 1.106.0's choices.

Roles: system and developer messages become the system instruction, user → `user`, assistant →
`model`; consecutive messages of one role share a turn; a run of tool results is one `user` turn of
`functionResponse` parts. Media are sent inline (data URLs) or by URI (`fileData`); the gateway never
fetches a URL itself (litellm downloads remote images and inlines them).
"""

from __future__ import annotations

import base64
import json
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from switchboard.errors import BadRequest

FILES_API = "https://generativelanguage.googleapis.com/v1beta/files/"
SIGNATURE_SEPARATOR = "__thought__"  # litellm carries Gemini's thought signature in the tool call id
# What Gemini 3 accepts in place of a signature it never gave (a call from another model's turn).
PLACEHOLDER_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()
USER_ROLES = ("user", "system")
RESULT_ROLES = ("tool", "function")
RESOLUTIONS = {
    "low": "MEDIA_RESOLUTION_LOW",
    "medium": "MEDIA_RESOLUTION_MEDIUM",
    "high": "MEDIA_RESOLUTION_HIGH",
    "ultra_high": "MEDIA_RESOLUTION_ULTRA_HIGH",
}
MIME_BY_EXTENSION = (
    ((".jpg", ".jpeg"), "image/jpeg"), ((".png",), "image/png"), ((".webp",), "image/webp"),
    ((".mp4",), "video/mp4"), ((".mov",), "video/mov"), ((".mpeg", ".mpg"), "video/mpeg"),
    ((".avi",), "video/avi"), ((".wmv",), "video/wmv"), ((".mpegps",), "video/mpegps"),
    ((".flv",), "video/flv"), ((".mp3",), "audio/mp3"), ((".wav",), "audio/wav"),
    ((".ogg",), "audio/ogg"), ((".pdf",), "application/pdf"), ((".txt",), "text/plain"),
)  # fmt: skip

Part = dict[str, Any]


class Turns(NamedTuple):
    system: dict[str, Any] | None  # {"parts": [...]} or None
    contents: list[dict[str, Any]]


def turns(messages: Any, *, system_instruction: bool, gemini_3: bool) -> Turns:
    """`messages` as Gemini turns. `system_instruction`: the model takes one (else system text joins
    the user turn); `gemini_3`: tool call ids and thought signatures go along."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("messages must be a list of objects", param="messages")
    messages = [{**m, "role": "system"} if m.get("role") == "developer" else m for m in messages]
    system: list[Part] = []
    if system_instruction:
        kept = []
        for message in messages:
            text = _system_text(message.get("content")) if message.get("role") == "system" else None
            if text is None:
                kept.append(message)
            else:
                system.append({"text": text})
        messages = kept or ([{"role": "user", "content": "."}] if system else [])
    return Turns({"parts": system} if system else None, _contents(messages, gemini_3))


def _system_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(item.get("text") or "") for item in content if isinstance(item, dict))
    return None


def _contents(messages: list[dict[str, Any]], gemini_3: bool) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    results: list[Part] = []
    calling: dict[str, Any] | None = None  # the last assistant message that called tools
    count = len(messages)
    i = 0
    while i < count:
        start = i
        parts: list[Part] = []
        while i < count and messages[i].get("role") in USER_ROLES:
            parts.extend(_user_parts(messages[i].get("content"), gemini_3))
            i += 1
        if parts:
            if not any("text" in part for part in parts):
                parts.append({"text": " "})  # Gemini refuses a user turn without a text part
            contents.append({"role": "user", "parts": parts})
        parts = []
        while i < count and messages[i].get("role") == "assistant":
            message = messages[i]
            _assistant_parts(message, parts, gemini_3)
            if message.get("tool_calls") or message.get("function_call") is not None:
                calling = message
            i += 1
        if parts:
            contents.append({"role": "model", "parts": parts})
        if i < count and messages[i].get("role") in RESULT_ROLES:
            results.extend(_result_parts(messages[i], calling, gemini_3))
            i += 1
        if i < count and messages[i].get("role") not in RESULT_ROLES and results:
            contents.append({"role": "user", "parts": results})
            results = []
        if i == start:
            raise BadRequest(f"messages[{i}] has a role Gemini cannot take", param="messages")
    if results:
        contents.append({"role": "user", "parts": results})
    return contents or [{"role": "user", "parts": [{"text": " "}]}]


def _user_parts(content: Any, gemini_3: bool) -> list[Part]:
    if isinstance(content, str):
        return [{"text": content}]
    if not isinstance(content, list):
        return []
    parts: list[Part] = []
    for item in content:
        if not isinstance(item, dict):
            raise BadRequest("a message content item must be an object", param="messages")
        kind = item.get("type")
        if kind == "text":
            if item.get("text"):
                parts.append({"text": item["text"]})
        elif kind == "image_url":
            image = item.get("image_url")
            if isinstance(image, dict):
                url = image.get("url")
                if not isinstance(url, str):
                    raise BadRequest("an image_url item has no url", param="messages")
                parts.append(_media(url, _mime_hint(image), image.get("detail"), gemini_3))
            elif isinstance(image, str):
                parts.append(_media(image, None, None, gemini_3))
            else:
                raise BadRequest("an image_url item has no image_url", param="messages")
        elif kind == "input_audio":
            audio = item.get("input_audio") or {}
            data, fmt = audio.get("data"), audio.get("format")
            if isinstance(data, str) and isinstance(fmt, str):
                mime = fmt if fmt.startswith("audio/") else "audio/" + fmt
                parts.append({"inlineData": {"mimeType": mime, "data": data}})
        elif kind == "file":
            file = item.get("file")
            if not isinstance(file, dict):
                raise BadRequest("a file item has no file", param="messages")
            source = file.get("file_id") or file.get("file_data")
            if not isinstance(source, str):
                raise BadRequest("a file item needs a file_id or file_data", param="messages")
            parts.append(_media(source, _mime_hint(file), file.get("detail"), gemini_3))
    return parts


def _mime_hint(fields: dict[str, Any]) -> str | None:
    hint = fields.get("format") or fields.get("mime_type") or fields.get("content_type")
    return hint if isinstance(hint, str) else None


def _media(url: str, mime: str | None, detail: Any, gemini_3: bool) -> Part:
    """A data URL inline; a Files API, gs:// or web URL by reference, for Gemini to fetch."""
    part: Part
    if url.startswith("data:"):
        head, separator, data = url[5:].partition(";base64,")
        if not separator:
            raise BadRequest("a data URL must be base64-encoded", param="messages")
        part = {"inlineData": {"mimeType": mime or head.replace("\\/", "/"), "data": data}}
    elif url.startswith((FILES_API, "gs://", "https://", "http://")):
        file_data = {"fileUri": url}
        mime = mime or _mime_from_path(url)
        if mime is None and url.startswith("gs://"):
            raise BadRequest(f"the media type of {url} is unknown: set its format", param="messages")
        if mime is not None:
            file_data = {"mimeType": mime, "fileUri": url}
        part = {"fileData": file_data}
    else:
        raise BadRequest("an image or file must be a data URL or an http(s) or gs:// URL", param="messages")
    level = RESOLUTIONS.get(detail) if isinstance(detail, str) else None
    if level is not None and gemini_3:
        part["mediaResolution"] = {"level": level}
    return part


def _mime_from_path(url: str) -> str | None:
    path = urlsplit(url.lower()).path
    for extensions, mime in MIME_BY_EXTENSION:
        if path.endswith(extensions):
            return mime
    return None


def _assistant_parts(message: dict[str, Any], parts: list[Part], gemini_3: bool) -> None:
    reasoning = message.get("reasoning_content")
    if reasoning is not None:
        parts.append({"thought": True, "text": reasoning})
    content = message.get("content")
    if isinstance(content, list):
        parts.extend(
            {"text": item.get("text")}
            for item in content
            if isinstance(item, dict) and item.get("type") == "text"
        )
    elif isinstance(content, str):
        parts.append(_signed_text(message, content))
    calls = message.get("tool_calls")
    first = True
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                part = _call_part(call["function"], call, gemini_3, first)
                first = False
                if not any(p.get("functionCall") == part["functionCall"] for p in parts):
                    parts.append(part)
    elif isinstance(message.get("function_call"), dict):
        parts.append(_call_part(message["function_call"], {}, gemini_3, True))


def _signed_text(message: dict[str, Any], text: str) -> Part:
    """Assistant text, with the thought signature a litellm client may hand back with it."""
    fields = message.get("provider_specific_fields")
    signatures = fields.get("thought_signatures") if isinstance(fields, dict) else None
    if isinstance(signatures, list) and signatures and isinstance(signatures[0], str):
        calls = message.get("tool_calls")
        used = (
            {_signature(call) for call in calls if isinstance(call, dict)}
            if isinstance(calls, list)
            else set()
        )
        if signatures[0] not in used:
            return {"text": text, "thoughtSignature": signatures[0]}
    return {"text": text}


def _signature(call: dict[str, Any]) -> str | None:
    """A tool call's thought signature: in provider_specific_fields, else after the id's separator."""
    for holder in (call, call.get("function")):
        fields = holder.get("provider_specific_fields") if isinstance(holder, dict) else None
        if isinstance(fields, dict) and fields.get("thought_signature"):
            return str(fields["thought_signature"])
    call_id = call.get("id")
    if isinstance(call_id, str) and SIGNATURE_SEPARATOR in call_id:
        return call_id.split(SIGNATURE_SEPARATOR, 1)[1]
    return None


def _call_part(function: dict[str, Any], call: dict[str, Any], gemini_3: bool, first: bool) -> Part:
    arguments = function.get("arguments", "")
    if arguments == "":
        args: Any = {"type": "object"}  # litellm's stand-in for "no arguments"
    elif isinstance(arguments, str):
        try:
            args = json.loads(arguments)
        except ValueError:
            raise BadRequest("a tool call's arguments are not JSON", param="messages") from None
    else:
        args = arguments
    invoke: dict[str, Any] = {"name": function.get("name") or "", "args": args}
    call_id = call.get("id")
    if gemini_3 and isinstance(call_id, str) and call_id.split(SIGNATURE_SEPARATOR, 1)[0]:
        invoke["id"] = call_id.split(SIGNATURE_SEPARATOR, 1)[0]  # Gemini 3 matches results by id
    part: Part = {"functionCall": invoke}
    signature = _signature(call) if call else _function_signature(function)
    if signature is None and gemini_3 and first:
        signature = PLACEHOLDER_SIGNATURE  # Gemini 3 wants the first call of a turn signed
    if signature:
        part["thoughtSignature"] = signature
    return part


def _function_signature(function: dict[str, Any]) -> str | None:
    fields = function.get("provider_specific_fields")
    value = fields.get("thought_signature") if isinstance(fields, dict) else None
    return str(value) if value else None


def _result_parts(message: dict[str, Any], calling: dict[str, Any] | None, gemini_3: bool) -> list[Part]:
    """A tool result as a `functionResponse` named after the call it answers."""
    content = message.get("content")
    text = ""
    inline: list[Part] = []
    if isinstance(content, str):
        text = content
        if text[:5].lower() == "data:" and ";base64," in text:
            mime, _, data = text[5:].partition(";base64,")
            if mime.startswith("image/"):
                inline.append({"inlineData": {"mimeType": mime.split(";")[0].strip(), "data": data}})
                text = ""
    elif isinstance(content, list):
        for item in content:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "text":
                text += str(item.get("text", ""))
            elif item.get("type") in ("image_url", "input_image"):
                image = item.get("image_url", "")
                url = image.get("url", "") if isinstance(image, dict) else image
                if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
                    mime, _, data = url[5:].partition(";base64,")
                    inline.append({"inlineData": {"mimeType": mime, "data": data}})
    name = message.get("name") or ""
    call_id = message.get("tool_call_id")
    if calling is not None and call_id:
        for call in calling.get("tool_calls") or []:
            if isinstance(call, dict) and call.get("id") == call_id:
                name = (call.get("function") or {}).get("name", "")
    if not name:
        raise BadRequest("a tool result answers no tool call of the message before it", param="messages")
    answer: dict[str, Any] = {"name": name, "response": _response_object(text)}
    if gemini_3 and isinstance(call_id, str) and call_id.split(SIGNATURE_SEPARATOR, 1)[0]:
        answer["id"] = call_id.split(SIGNATURE_SEPARATOR, 1)[0]
    if inline:
        answer["parts"] = inline
    return [{"functionResponse": answer}]


def _response_object(text: str) -> dict[str, Any]:
    """A JSON object result as it is; anything else as {"content": text}."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"content": text}
