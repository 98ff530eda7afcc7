"""Reading raw ASGI scopes in middleware, before any framework object exists."""

from __future__ import annotations

from starlette.types import Scope


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a request header; `name` is lower-case, as ASGI gives header names."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None
