"""HTTP routes of LLM credentials (SPEC §7); each calls one service function."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request, Response, status

from switchboard.auth.dependencies import CurrentPrincipal, WriterPrincipal
from switchboard.credentials import service
from switchboard.credentials.schemas import CredentialCreate, CredentialOut, CredentialUpdate
from switchboard.credentials.store import CredentialStore
from switchboard.db.session import DbSession
from switchboard.kit.page_query import Cursor, Limit
from switchboard.kit.pagination import DEFAULT_LIMIT, Page

router = APIRouter(prefix="/llm-credentials", tags=["LLM Credentials"])


def _store(request: Request) -> CredentialStore:
    store: CredentialStore = request.app.state.credentials
    return store


Store = Annotated[CredentialStore, Depends(_store)]


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="createLlmCredential_LlmCredentials")
async def create_credential(
    body: CredentialCreate, principal: WriterPrincipal, session: DbSession, store: Store
) -> CredentialOut:
    return await service.create_credential(session, store, principal, body)


@router.get("", operation_id="listLlmCredentials_LlmCredentials")
async def list_credentials(
    principal: CurrentPrincipal,
    session: DbSession,
    scope: Annotated[Literal["user", "room"] | None, Query()] = None,
    room_id: Annotated[uuid.UUID | None, Query()] = None,
    cursor: Cursor = None,
    limit: Limit = DEFAULT_LIMIT,
) -> Page[CredentialOut]:
    return await service.list_credentials(session, principal, scope, room_id, cursor, limit)


@router.get("/{credential_id}", operation_id="getLlmCredential_LlmCredentials")
async def get_credential(
    credential_id: uuid.UUID, principal: CurrentPrincipal, session: DbSession
) -> CredentialOut:
    return await service.get_credential(session, principal, credential_id)


@router.patch("/{credential_id}", operation_id="updateLlmCredential_LlmCredentials")
async def update_credential(
    credential_id: uuid.UUID,
    body: CredentialUpdate,
    principal: WriterPrincipal,
    session: DbSession,
    store: Store,
) -> CredentialOut:
    return await service.update_credential(session, store, principal, credential_id, body)


@router.delete(
    "/{credential_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="deleteLlmCredential_LlmCredentials",
)
async def delete_credential(
    credential_id: uuid.UUID, principal: WriterPrincipal, session: DbSession, store: Store
) -> Response:
    await service.delete_credential(session, store, principal, credential_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
