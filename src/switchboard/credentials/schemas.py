"""Wire shapes of LLM credentials: the secret goes in as a SecretStr and never comes out."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)

from switchboard.credentials.provider_rules import secret_from_object, string_or_object
from switchboard.upstream import providers

SECRET_MAX_CHARS = 4096
BASE_URL_MAX_CHARS = 2048
# A kind the gateway cannot guard passes here to be refused by the store with its reason (422).
StorableKind = Annotated[str, AfterValidator(providers.storable_kind)]
Label = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]
BaseUrl = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=BASE_URL_MAX_CHARS)
]


def clean_secret(value: SecretStr | None) -> SecretStr | None:
    """Trim surrounding whitespace (a paste artefact); refuse what no provider key looks like.

    Messages never quote the value: error bodies must not carry any part of a secret.
    """
    if value is None:
        return None
    raw = value.get_secret_value().strip()
    if not raw:
        raise ValueError("secret must not be empty or whitespace")
    if len(raw) > SECRET_MAX_CHARS:
        raise ValueError(f"secret must be at most {SECRET_MAX_CHARS} characters")
    if raw.startswith("{"):
        # A JSON secret (azure, bedrock): its provider checks it field by field (provider_rules.py).
        return SecretStr(raw)
    # Printable ASCII only: the key goes into an HTTP header, where anything else breaks or injects.
    if any(not ("!" <= ch <= "~") for ch in raw):
        raise ValueError("secret must be printable ASCII without spaces or control characters")
    return SecretStr(raw)


class _Input(BaseModel):
    # A misspelt field (say `api_key`) is a 400, not silently dropped.
    model_config = ConfigDict(extra="forbid")


class CredentialCreate(_Input):
    provider: StorableKind = Field(description="a provider kind from GET /providers")
    secret: SecretStr = Field(
        description="the provider API key, or the JSON object GET /providers names for the kind "
        "(azure, bedrock); write-only, never returned",
        json_schema_extra=string_or_object,
    )
    label: Label | None = None
    base_url: BaseUrl | None = Field(
        default=None,
        description="openai: an OpenAI-compatible server's URL including /v1; azure: the resource "
        "endpoint; other kinds: the provider's API base (litellm's api_base); null: the provider's own",
    )
    scope: Literal["user", "room"] | None = Field(
        default=None, description="`room` when room_id is given, else `user`"
    )
    room_id: uuid.UUID | None = None

    _secret_object = field_validator("secret", mode="before")(secret_from_object)
    _check_secret = field_validator("secret")(clean_secret)

    @model_validator(mode="after")
    def _scope_matches_room(self) -> CredentialCreate:
        if self.scope is None:
            self.scope = "room" if self.room_id is not None else "user"
        if self.scope == "room" and self.room_id is None:
            raise ValueError("room_id is required when scope is room")
        if self.scope == "user" and self.room_id is not None:
            raise ValueError("room_id is only allowed when scope is room")
        return self


class CredentialUpdate(_Input):
    """Only the fields present change; `label: null` and `base_url: null` clear them."""

    label: Label | None = None
    base_url: BaseUrl | None = None
    secret: SecretStr | None = Field(
        default=None,
        description="a new provider API key (or JSON object, as at creation); write-only",
        json_schema_extra=string_or_object,
    )

    _secret_object = field_validator("secret", mode="before")(secret_from_object)
    _check_secret = field_validator("secret")(clean_secret)


class CredentialOut(BaseModel):
    """A credential as callers see it; deliberately no field that could hold the secret."""

    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    provider: str
    label: str | None
    scope: Literal["user", "room"]
    room_id: uuid.UUID | None
    user_id: uuid.UUID | None
    base_url: str | None
    secret_hint: str = Field(description="the last four characters of the secret (empty for short ones)")
    created_by: uuid.UUID
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None
