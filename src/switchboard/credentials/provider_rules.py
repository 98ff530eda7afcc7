"""What a credential's provider asks of its secret and base_url (SPEC §7, §15), answered as 400s.

The rules themselves live in upstream/providers.py, next to the code that sends the secret; this
module turns a broken rule into the error a caller sees, before anything is stored.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import SecretStr

from switchboard.credentials.binding import hint_of
from switchboard.errors import Unprocessable, ValidationFailed
from switchboard.upstream import providers


def secret_from_object(value: object) -> object:
    """A secret given as a JSON object (azure's, bedrock's) continues as its JSON text, so that it is
    a SecretStr like any other from here on; its fields are checked against the provider later."""
    if isinstance(value, dict):
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:  # an integer over 64 bits, or nesting past orjson's bound
            raise ValueError("secret must be a string or an object of strings") from None
    return value


def string_or_object(schema: dict[str, Any]) -> None:
    """The OpenAPI shape of a `secret` field: a string, or an object of strings (GET /providers)."""
    nullable = any(variant.get("type") == "null" for variant in schema.get("anyOf", ()))
    schema.pop("type", None)
    schema.pop("format", None)
    schema["anyOf"] = [
        {"type": "string", "format": "password"},
        {"type": "object", "additionalProperties": {"type": "string"}},
        *([{"type": "null"}] if nullable else []),
    ]


def sealable(provider: str, secret: SecretStr) -> tuple[str, str]:
    """(the text to encrypt, its hint) for a secret that fits `provider`; a JSON secret is kept in
    one canonical form, and its hint comes from its identifying field (never its private one)."""
    try:
        plain, hint_source = providers.canonical_secret(provider, secret.get_secret_value())
    except providers.SecretProblem as problem:
        raise _failed("secret", str(problem)) from None
    return plain, hint_of(hint_source)


def check_offered(provider: str) -> None:
    """422 for a kind the gateway does not offer because it cannot guard its calls (SPEC §21), on
    create and on any change of a credential stored before the kind stopped being offered."""
    if provider in providers.UNGUARDED:
        raise Unprocessable(providers.unguarded_reason(provider), param="provider")
    if not providers.is_known(provider):
        raise Unprocessable(f"provider {provider!r} is not offered any more", param="provider")


def check_usable(provider: str, base_url: str | None, allow_private: bool) -> None:
    """400 when a credential of `provider` with this base_url could not be called safely."""
    problem = providers.refusal(provider, base_url, allow_private)
    if problem is not None:
        raise _failed("provider" if provider in providers.BORROWS_HOST_IDENTITY else "base_url", problem)


def _failed(field: str, problem: str) -> ValidationFailed:
    # The same shape as a request that fails pydantic's validation (error_shapes.py).
    return ValidationFailed(
        f"{field}: {problem}", details=[{"field": field, "problem": problem}], param=field
    )
