"""Declares, in the OpenAPI document, the 4xx answers each operation can give, in its surface's shape."""

from __future__ import annotations

from typing import Any

from switchboard.error_shapes import Surface, surface_for

ANONYMOUS_PREFIXES = ("/version", "/health", "/ready", "/.well-known/", "/openapi.json", "/docs")
ANONYMOUS_PATHS = frozenset({"/auth/login", "/auth/api-key", "/auth/refresh"})

SCHEMAS: dict[str, dict[str, Any]] = {
    "OpenAIError": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type"],
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "param": {"type": ["string", "null"]},
                    "code": {"type": ["string", "null"]},
                },
            }
        },
    },
    "AnthropicError": {  # /v1/messages (SPEC §16)
        "type": "object",
        "required": ["type", "error"],
        "properties": {
            "type": {"const": "error"},
            "error": {
                "type": "object",
                "required": ["type", "message"],
                "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
    "RegistryError": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "details": {"type": ["string", "object", "null"]},
                },
            }
        },
    },
    "FlatError": {
        "type": "object",
        "required": ["error", "code"],
        "properties": {
            "error": {"type": "string"},
            "code": {"type": "string"},
            "details": {},
        },
    },
}
_SCHEMA_OF = {
    Surface.OPENAI: "OpenAIError",
    Surface.ANTHROPIC: "AnthropicError",
    Surface.REGISTRY: "RegistryError",
    Surface.FLAT: "FlatError",
}
_WHY = {
    "400": "Malformed JSON, a field of the wrong type or out of range, or an idempotency conflict",
    "401": "Missing, malformed, expired or wrongly signed bearer token",
    "402": "A cost limit is spent (budget_exceeded) or the model has no price under one",
    "403": "The token lacks the role, permission or delegation scope",
    "404": "Not found, or not visible to the caller",
    "409": "Conflicting state, or the same Idempotency-Key still running",
    "413": "Request body over the configured limit",
    "422": "Well-formed input that does not resolve",
    "424": "The provider rejected the stored credential",
    "429": "A rate limit (or the provider's) was hit; see Retry-After",
    "431": "Request head over the server's limits",
}


def _codes(path: str, method: str) -> list[str]:
    codes = ["400", "404", "431"]
    if path in ANONYMOUS_PATHS:
        codes += ["401"]  # a sign-in that fails
    elif not path.startswith(ANONYMOUS_PREFIXES):
        codes += ["401", "403"]
    if method in ("post", "put", "patch"):
        codes += ["409", "413", "422"]
    if path.startswith("/v1/") and method == "post":
        codes += ["402", "424", "429"]
    return sorted(set(codes))


def declare_errors(document: dict[str, Any]) -> dict[str, Any]:
    """Adds each operation's 4xx answers (in place; returned for chaining)."""
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in SCHEMAS.items():
        components.setdefault(name, schema)
    for path, item in document.get("paths", {}).items():
        schema = {"$ref": f"#/components/schemas/{_SCHEMA_OF[surface_for(path)]}"}
        for method, operation in item.items():
            if not isinstance(operation, dict) or method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            if "HTTPValidationError" in str(responses.get("422", "")):
                del responses["422"]  # FastAPI's default; its validation errors are answered 400 here
            for code in _codes(path, method):
                responses.setdefault(
                    code, {"description": _WHY[code], "content": {"application/json": {"schema": schema}}}
                )
    return document
