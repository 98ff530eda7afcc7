"""OpenAI image and file parts as Anthropic image and document blocks.

A data URL becomes a base64 source; a web URL is handed to Anthropic as a `url` source, which
Anthropic fetches itself. The gateway never downloads a client's URL: litellm does for `http://`
URLs (and any URL in `file_data`), but a gateway that fetches what a caller names can be steered at
addresses only it can reach.
"""

from __future__ import annotations

from typing import Any

from switchboard.errors import BadRequest

Block = dict[str, Any]
DOCUMENT_TYPES = frozenset(("application/pdf", "text/plain"))  # what a base64 document source takes
IMAGE_TYPES = frozenset(("image/jpeg", "image/png", "image/gif", "image/webp"))


def image(value: object, *, documents: bool = False) -> Block:
    """An `image_url` part's value (a string or `{url, format?, detail?}`) as an image block; with
    `documents` (inside tool results), a PDF or text data URL becomes a document block instead."""
    url, media_format = (value, None) if isinstance(value, str) else _url_and_format(value)
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    media_type, data = _data_url(url, media_format)
    if documents and _declared_type(url) in DOCUMENT_TYPES:
        return {"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def file(value: object) -> Block:
    """A `file` part's `file` object (`file_data` as a data URL, or a `file_id`) as a block."""
    if not isinstance(value, dict):
        raise BadRequest("a content part of type 'file' needs a 'file' object", param="messages")
    data, file_id, media_format = value.get("file_data"), value.get("file_id"), value.get("format")
    if isinstance(data, str) and data:
        if data.startswith(("https://", "http://")):
            return {"type": "document", "source": {"type": "url", "url": data}}
        media_type, encoded = _data_url(data, media_format if isinstance(media_format, str) else None)
        return {"type": "document", "source": {"type": "base64", "media_type": media_type, "data": encoded}}
    if isinstance(file_id, str) and file_id:
        if isinstance(media_format, str) and media_format:
            if media_format in DOCUMENT_TYPES:
                return {"type": "document", "source": {"type": "file", "file_id": file_id}}
            if media_format in IMAGE_TYPES:
                return {"type": "image", "source": {"type": "file", "file_id": file_id}}
        elif file_id.startswith("http"):
            return {"type": "document", "source": {"type": "url", "url": file_id}}
        # Anything else would be a code-execution container upload, which needs a tool we do not add.
        raise BadRequest("this file cannot be given to an Anthropic model", param="messages")
    raise BadRequest("a file part needs file_data or file_id", param="messages")


def uses_file_ids(messages: object) -> bool:
    """Whether a user message names an uploaded file (which needs Anthropic's Files API beta)."""
    for message in messages if isinstance(messages, list) else []:
        content = (
            message.get("content") if isinstance(message, dict) and message.get("role") == "user" else None
        )
        for part in content if isinstance(content, list) else []:
            inner = part.get("file") if isinstance(part, dict) and part.get("type") == "file" else None
            if isinstance(inner, dict) and inner.get("file_id"):
                return True
    return False


def _url_and_format(value: object) -> tuple[str, str | None]:
    if not isinstance(value, dict) or not isinstance(value.get("url"), str):
        raise BadRequest("an image_url part needs a url", param="messages")
    media_format = value.get("format")
    return value["url"], media_format if isinstance(media_format, str) and media_format else None


def _data_url(url: str, media_format: str | None) -> tuple[str, str]:
    """`data:<type>;base64,<data>` as (media type, data); `format` names the type instead."""
    head, marker, data = url.partition(";base64,")
    if not head.startswith("data:") or not marker:
        raise BadRequest(
            "an image or file must be an http(s) URL or a data URL (data:<type>;base64,<data>)",
            param="messages",
        )
    return media_format or head[5:].replace("\\/", "/"), data


def _declared_type(url: str) -> str:
    return url[5:].split(";", 1)[0].split(",", 1)[0] if url.startswith("data:") else ""
