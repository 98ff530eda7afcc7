"""Wire shapes of the upstream domain: the provider kinds a credential may name (GET /providers)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ProviderOut(BaseModel):
    kind: str = Field(
        description="the name a credential's `provider` and a `<provider>/<model>` selector use"
    )
    native: bool = Field(
        description="called by the gateway's own code (openai relayed as is, anthropic and gemini "
        "translated by its adapters); otherwise through litellm, loaded on the first such call"
    )
    credential_format: Literal["string", "json"] = Field(
        description="the credential's `secret`: the API key as one string, or a JSON object of json_fields"
    )
    json_fields: list[str] = Field(description="the fields a JSON secret must have")
    optional_json_fields: list[str] = Field(description="the fields a JSON secret may also have")
    base_url: Literal["optional", "required"] = Field(
        description="whether a credential of this kind takes a base_url (litellm's api_base; for "
        "openai a URL including /v1; for azure the resource endpoint)"
    )
