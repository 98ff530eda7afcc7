"""Wire shapes of the embedded auth (the seed's authentication resources)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

Scope = Literal["read", "write", "manage"]


class LoginRequest(BaseModel):
    email: str = Field(min_length=1, max_length=320)
    password: SecretStr = Field(min_length=1, max_length=1024)


class RefreshRequest(BaseModel):
    refresh_token: SecretStr = Field(min_length=1, max_length=8192)


class ApiKeyExchangeRequest(BaseModel):
    api_key: SecretStr = Field(min_length=1, max_length=8192)


class SignedInUser(BaseModel):
    id: uuid.UUID
    email: str | None
    role: str


class LoginResult(BaseModel):
    """Every sign-in path answers with this (seed: Login result)."""

    token: str
    refresh_token: str
    token_type: Literal["Bearer"] = "Bearer"
    expires_in: int = Field(description="seconds until `token` expires")
    user: SignedInUser


class ApiKeyIssueRequest(BaseModel):
    service_name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=500)


class ApiKeyInfo(BaseModel):
    id: uuid.UUID
    service_name: str
    description: str
    key_prefix: str = Field(description="`svc_api_` and the first four characters, to tell keys apart")
    created_at: datetime
    revoked_at: datetime | None


class ApiKeyIssued(ApiKeyInfo):
    api_key: str = Field(description="the key itself: shown in this answer only, never again")


class DelegationRequest(BaseModel):
    group_id: uuid.UUID
    delegation_scope: list[Scope] = Field(min_length=1, max_length=3)
    expiry_seconds: int = Field(default=3600, ge=60, le=86400)


class DelegationResult(BaseModel):
    delegation_jwt: str
    delegation_scope: list[Scope]
    expiry_seconds: int
    group_id: uuid.UUID
    delegation_token_id: uuid.UUID
    expires_at: datetime


class DelegationTokenInfo(BaseModel):
    id: uuid.UUID
    group_id: uuid.UUID
    delegation_scope: list[str]
    created_at: datetime
    expires_at: datetime


class CallerClaims(BaseModel):
    """Who the bearer is, as the gateway sees it (seed: Caller claims)."""

    user_id: uuid.UUID
    email: str | None
    role: str
    permissions: list[str]
    auth_method: str
    session_id: str | None
    acting_as: uuid.UUID | None
    delegation_scope: list[str] | None
    delegation_token_id: str | None
    api_key_id: uuid.UUID | None
    default_wallet_id: str | None = None
    account_address: str | None = None
    iat: int | None = None
    exp: int | None = None


class UserOut(BaseModel):
    """A person by email (GET /users): only for callers who may know them (auth/directory.py)."""

    id: uuid.UUID
    email: str
