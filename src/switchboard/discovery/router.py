"""Anonymous probes and discovery documents (SPEC §11), and the /mcp OAuth challenge."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from switchboard.auth.dependencies import current_principal
from switchboard.discovery import service
from switchboard.discovery.schemas import (
    AuthorizationServerDocument,
    HealthStatus,
    ProtectedResourceDocument,
    ReadyStatus,
    VersionInfo,
)
from switchboard.errors import NotFound, Unauthorized

router = APIRouter(tags=["Health"])
extra_router = APIRouter(tags=["MCP"])

_ERRORS: dict[int | str, dict[str, Any]] = {503: {"description": "the database does not answer"}}


@router.get("/health", operation_id="health_Health", response_model=HealthStatus)
async def health() -> HealthStatus:
    """Liveness: the process answers."""
    return HealthStatus(status="ok")


@router.get("/ready", operation_id="ready_Health", response_model=ReadyStatus, responses=_ERRORS)
async def ready(request: Request) -> ReadyStatus:
    """Readiness: 200 only when the database answers."""
    await service.check_database(request.app.state.engine)
    return ReadyStatus(status="ready", database="ok")


@router.get("/version", operation_id="getVersion_Health", response_model=VersionInfo)
async def version(request: Request) -> VersionInfo:
    return service.version(request.app.state.settings)


@extra_router.get(
    "/.well-known/oauth-protected-resource",
    operation_id="getProtectedResourceMetadata_MCP",
    response_model=ProtectedResourceDocument,
)
@extra_router.get(
    "/.well-known/oauth-protected-resource/mcp",
    operation_id="getProtectedResourceMetadataMcp_MCP",
    response_model=ProtectedResourceDocument,
)
async def protected_resource(request: Request) -> ProtectedResourceDocument:
    """OAuth protected-resource metadata for `/mcp` (RFC 9728)."""
    return service.protected_resource(request.app.state.settings)


@extra_router.get(
    "/.well-known/oauth-authorization-server",
    operation_id="getAuthorizationServerMetadata_MCP",
    response_model=AuthorizationServerDocument,
)
@extra_router.get(
    "/.well-known/oauth-authorization-server/mcp",
    operation_id="getAuthorizationServerMetadataMcp_MCP",
    response_model=AuthorizationServerDocument,
)
async def authorization_server(request: Request) -> AuthorizationServerDocument:
    """OAuth authorization-server metadata (RFC 8414), derived from `SWITCHBOARD_AUTH_URL`."""
    return service.authorization_server(request.app.state.settings)


@extra_router.post(
    "/mcp",
    operation_id="handleMcpHttp_Misc",
    status_code=404,
    responses={
        401: {"description": "no valid bearer token; `WWW-Authenticate` points at the resource metadata"},
        404: {"description": "authenticated: this gateway does not serve the MCP transport"},
    },
)
async def handle_mcp(request: Request) -> None:
    """MCP transport endpoint: only its OAuth challenge is served here."""
    try:
        await current_principal(request)
    except Unauthorized as reason:
        raise service.mcp_challenge(request.app.state.settings, reason) from None
    raise NotFound("this gateway does not serve the MCP transport; only its OAuth discovery is served")
