"""Wire shapes of the discovery documents, the version probe and the health probes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Exact(BaseModel):
    # Field-exact documents: clients validate them against schemas that forbid extra fields.
    model_config = ConfigDict(extra="forbid")


class ProtectedResourceDocument(_Exact):
    """OAuth 2.0 protected-resource metadata for `/mcp` (RFC 9728)."""

    resource: str
    authorization_servers: list[str] = Field(min_length=1)
    bearer_methods_supported: list[Literal["header"]]


class AuthorizationServerDocument(_Exact):
    """OAuth 2.0 authorization-server metadata (RFC 8414): the nine fields, nothing else."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str
    response_types_supported: list[str]
    grant_types_supported: list[str]
    code_challenge_methods_supported: list[str]
    token_endpoint_auth_methods_supported: list[str]
    scopes_supported: list[str]


class VersionInfo(_Exact):
    service: str = Field(examples=["svc-agents"])
    api_version: str = Field(examples=["0.14.0"])
    git_sha: str = Field(description="short commit, or `unknown`")
    built_at: str = Field(description="UTC RFC 3339")


class HealthStatus(_Exact):
    status: Literal["ok"]


class ReadyStatus(_Exact):
    status: Literal["ready"]
    database: Literal["ok"]
