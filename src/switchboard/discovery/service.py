"""Builds the discovery documents from settings and checks that the database answers."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from switchboard import API_VERSION, SERVICE_NAME
from switchboard.discovery.schemas import AuthorizationServerDocument, ProtectedResourceDocument, VersionInfo
from switchboard.errors import ServiceUnavailable, Unauthorized
from switchboard.settings import Settings

log = logging.getLogger("switchboard.discovery")
READY_TIMEOUT_SECONDS = 2.0
MCP_PATH = "/mcp"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"


def protected_resource(settings: Settings) -> ProtectedResourceDocument:
    return ProtectedResourceDocument(
        resource=settings.public_url + MCP_PATH,
        authorization_servers=[settings.auth_url],
        bearer_methods_supported=["header"],
    )


def authorization_server(settings: Settings) -> AuthorizationServerDocument:
    # Derived from the auth service's base URL, never fetched from it (the seed: "not proxied").
    # Endpoint paths are the MCP authorization spec's defaults for an auth server without metadata.
    base = settings.auth_url
    return AuthorizationServerDocument(
        issuer=base,
        authorization_endpoint=f"{base}/authorize",
        token_endpoint=f"{base}/token",
        registration_endpoint=f"{base}/register",
        response_types_supported=["code"],
        grant_types_supported=["authorization_code", "refresh_token"],
        code_challenge_methods_supported=["S256"],
        token_endpoint_auth_methods_supported=["none"],
        scopes_supported=["mcp"],
    )


def mcp_challenge(settings: Settings, reason: Unauthorized) -> Unauthorized:
    """The 401 an MCP client follows to the protected-resource document (RFC 9728 §5.1)."""
    metadata = f"{settings.public_url}{PROTECTED_RESOURCE_PATH}{MCP_PATH}"
    challenge = f'Bearer resource_metadata="{metadata}"'
    return Unauthorized(reason.message, headers={"WWW-Authenticate": challenge})


def version(settings: Settings) -> VersionInfo:
    return VersionInfo(
        service=SERVICE_NAME, api_version=API_VERSION, git_sha=settings.git_sha, built_at=settings.built_at
    )


async def check_database(engine: AsyncEngine) -> None:
    """Raise 503 unless the database answers `SELECT 1` within a short timeout."""
    try:
        async with asyncio.timeout(READY_TIMEOUT_SECONDS), engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:
        log.warning("readiness check failed: %s", type(exc).__name__)
        raise ServiceUnavailable("database unavailable") from None
