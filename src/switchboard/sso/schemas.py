"""Wire shapes of the SSO routes."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr


class SsoStatus(BaseModel):
    """Whether the console offers "Sign in with SSO", and where it starts."""

    enabled: bool
    sign_in_url: str | None = None


class SsoTicketRequest(BaseModel):
    ticket: SecretStr = Field(min_length=1, max_length=128)
