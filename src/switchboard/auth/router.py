"""The embedded-auth routes (SPEC §10): sign-in, API keys, claims, delegation."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from switchboard.auth import api_keys, delegation, login, refresh
from switchboard.auth.claims import caller_claims
from switchboard.auth.dependencies import Auth, CurrentPrincipal
from switchboard.auth.schemas import (
    ApiKeyExchangeRequest,
    ApiKeyInfo,
    ApiKeyIssued,
    ApiKeyIssueRequest,
    CallerClaims,
    DelegationTokenInfo,
    LoginRequest,
    LoginResult,
    RefreshRequest,
)
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page

router = APIRouter(tags=["Auth"])


@router.post("/auth/login", operation_id="login_Auth")
async def post_login(body: LoginRequest, session: DbSession, auth: Auth) -> LoginResult:
    return await login.login(auth, session, body.email, body.password.get_secret_value())


@router.post("/auth/refresh", operation_id="refresh_Auth")
async def post_refresh(body: RefreshRequest, auth: Auth, request: Request) -> LoginResult:
    return await refresh.rotate(auth, body.refresh_token.get_secret_value(), request.scope)


@router.post("/auth/logout", status_code=status.HTTP_204_NO_CONTENT, operation_id="logout_Auth")
async def post_logout(body: RefreshRequest, auth: Auth) -> Response:
    """Sign-out: the session's refresh token stops working (its access token lives out its 15 minutes)."""
    await refresh.end(auth, body.refresh_token.get_secret_value())
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/auth/api-key", operation_id="exchangeApiKey_Auth")
async def post_api_key(body: ApiKeyExchangeRequest, session: DbSession, auth: Auth) -> LoginResult:
    return await api_keys.exchange(auth, session, body.api_key.get_secret_value())


@router.post(
    "/auth/api-key/generate", status_code=status.HTTP_201_CREATED, operation_id="generateApiKey_Auth"
)
async def generate_api_key(
    body: ApiKeyIssueRequest, principal: CurrentPrincipal, session: DbSession, auth: Auth
) -> ApiKeyIssued:
    return await api_keys.issue(auth, session, principal, body)


@router.get("/auth/api-keys", operation_id="listApiKeys_Auth")
async def list_api_keys(
    principal: CurrentPrincipal, session: DbSession, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
) -> Page[ApiKeyInfo]:
    data, next_cursor = await api_keys.list_active(session, principal, cursor, limit)
    return Page(data=data, next_cursor=next_cursor)


@router.post("/auth/api-keys/{key_id}/revoke", operation_id="revokeApiKey_Auth")
async def revoke_api_key(key_id: str, principal: CurrentPrincipal, session: DbSession) -> ApiKeyInfo:
    return await api_keys.revoke(session, principal, key_id)


@router.get("/protected/jwt", operation_id="callerClaims_Auth")
async def protected_jwt(principal: CurrentPrincipal) -> CallerClaims:
    return caller_claims(principal)


@router.get("/auth/delegation/tokens", operation_id="listDelegationTokens_Auth")
async def list_delegation_tokens(
    principal: CurrentPrincipal, session: DbSession, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT
) -> Page[DelegationTokenInfo]:
    data, next_cursor = await delegation.list_active(session, principal, cursor, limit)
    return Page(data=data, next_cursor=next_cursor)


@router.delete(
    "/auth/delegation/tokens/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="revokeDelegationToken_Auth",
)
async def revoke_delegation_token(token_id: str, principal: CurrentPrincipal, session: DbSession) -> Response:
    await delegation.revoke(session, principal, token_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# The older paths the seed also gives; same handlers, marked deprecated in the OpenAPI document.
router.add_api_route(
    "/auth/delegation-tokens",
    list_delegation_tokens,
    methods=["GET"],
    deprecated=True,
    operation_id="listDelegationTokensLegacy_Auth",
    response_model=Page[DelegationTokenInfo],
)
router.add_api_route(
    "/auth/delegation-tokens/{token_id}",
    revoke_delegation_token,
    methods=["DELETE"],
    deprecated=True,
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="revokeDelegationTokenLegacy_Auth",
)
