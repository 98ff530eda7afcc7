"""Server-sent events as the gateway writes them: one framer for every surface and relay.

An event is `data: <json>` and a blank line (OpenAI's chunks), or `event: <name>` before it
(Anthropic's and the Responses API's). The payload is serialized once, straight into the frame.
"""

from __future__ import annotations

import orjson

DATA = b"data: "
# The last event of an OpenAI-format stream (chat, text completions).
DONE = b"data: [DONE]\n\n"


def frame(payload: object) -> bytes:
    """`data: <payload as JSON>` and its blank line."""
    return DATA + orjson.dumps(payload) + b"\n\n"


def frame_event(name: str, payload: object) -> bytes:
    """`event: <name>` then `data: <payload as JSON>` and the blank line."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def payload_of(event: bytes) -> bytes:
    """A framed `data: …` event's JSON (trailing blank line included; JSON parsers skip it)."""
    return event[len(DATA) :]
