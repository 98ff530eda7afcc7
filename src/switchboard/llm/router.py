"""The /v1 routes: thin adapters from HTTP to the call pipeline."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request
from starlette.responses import Response

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.llm import service

router = APIRouter(prefix="/v1", tags=["LLM Compatibility"])

# Documented for OpenAPI only: the body is read raw so that unknown fields pass through untouched.
OpenAIBody = Annotated[
    dict[str, Any], Body(description="An OpenAI request body; extra fields are relayed as is.")
]


@router.post(
    "/chat/completions",
    operation_id="createChatCompletion_LLM",
    response_model=None,
    openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
    },
)
async def chat_completions(request: Request, principal: CurrentPrincipal) -> Any:
    # POST traffic normally takes llm/fast_routes.py; this route documents it and serves the rest.
    return await service.chat_completions(
        request.app.state,
        principal,
        request.headers,
        request.url.path,
        service.request_id_of(request),
        await request.body(),
    )


@router.post(
    "/embeddings",
    operation_id="createEmbedding_LLM",
    response_model=None,
    openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
    },
)
async def embeddings(request: Request, principal: CurrentPrincipal) -> Response:
    return await service.embeddings(
        request.app.state,
        principal,
        request.headers,
        request.url.path,
        service.request_id_of(request),
        await request.body(),
    )


@router.get("/models", operation_id="listModels_LLM")
async def list_models(request: Request, principal: CurrentPrincipal) -> dict[str, Any]:
    return await service.list_models(request.app.state, principal, request.headers)


@router.get("/models/{model:path}", operation_id="getModel_LLM")
async def get_model(
    request: Request, principal: CurrentPrincipal, model: Annotated[str, Path(max_length=256)]
) -> dict[str, Any]:
    return await service.get_model(request.app.state, principal, request.headers, model)
