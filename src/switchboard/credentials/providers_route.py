"""GET /providers (SPEC §15): the provider kinds credentials and selectors may name.

The list is the upstream layer's (upstream/service.py); the route lives here, with the credentials
it describes, because it needs the caller (auth), a domain that upstream, below it, must not import.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page
from switchboard.upstream import service
from switchboard.upstream.schemas import ProviderOut

# Listed with credentials: the list tells a caller what a credential's `provider` and `secret` take.
router = APIRouter(tags=["LLM Credentials"])


def _allow_private(request: Request) -> bool:
    return bool(request.app.state.settings.allow_private_upstreams)


AllowPrivate = Annotated[bool, Depends(_allow_private)]


@router.get("/providers", operation_id="listProviders_LlmCredentials")
async def list_providers(
    _principal: CurrentPrincipal,
    allow_private: AllowPrivate,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[ProviderOut]:
    return service.list_providers(cursor, limit, allow_private)
