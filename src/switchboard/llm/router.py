"""The /v1 routes: thin adapters from HTTP to the call pipeline."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request
from starlette.responses import Response

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.auth.principal import Principal
from switchboard.llm import count_tokens, service
from switchboard.llm.fast_routes import Handler

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
    return await _model_call(service.chat_completions, request, principal)


@router.post(
    "/completions",
    operation_id="createCompletion_LLM",
    response_model=None,
    openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
    },
)
async def completions(request: Request, principal: CurrentPrincipal) -> Any:
    """The legacy text-completion API (relayed to `openai`, over chat for other providers)."""
    return await _model_call(service.completions, request, principal)


@router.post(
    "/responses",
    operation_id="createResponse_LLM",
    response_model=None,
    openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
    },
)
async def responses(request: Request, principal: CurrentPrincipal) -> Any:
    """OpenAI's Responses API (relayed to `openai`, over chat for other providers; stateless there)."""
    return await _model_call(service.responses, request, principal)


@router.post(
    "/messages",
    operation_id="createMessage_LLM",
    response_model=None,
    openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
    },
)
async def messages(request: Request, principal: CurrentPrincipal) -> Any:
    """Anthropic's Messages API (relayed to `anthropic`, translated for other providers); the key may
    come in `x-api-key` as well as `Authorization: Bearer`."""
    return await _model_call(service.messages, request, principal)


@router.post(
    "/messages/count_tokens",
    operation_id="countMessageTokens_LLM",
    response_model=None,
    openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
    },
)
async def count_message_tokens(request: Request, principal: CurrentPrincipal) -> Any:
    """A Messages request's input tokens: asked of Anthropic, counted by the gateway for other providers."""
    return await _model_call(count_tokens.count_tokens, request, principal)


@router.post(
    "/embeddings",
    operation_id="createEmbedding_LLM",
    response_model=None,
    openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
    },
)
async def embeddings(request: Request, principal: CurrentPrincipal) -> Response:
    return await _model_call(service.embeddings, request, principal)


async def _model_call(handler: Handler, request: Request, principal: Principal) -> Response:
    # POSTs normally take llm/fast_routes.py; these routes document them and serve a mounted app.
    pipeline, headers, path = request.app.state.pipeline, request.headers, request.url.path
    return await handler(
        pipeline, principal, headers, path, service.request_id_of(request), await request.body()
    )


@router.get("/models", operation_id="listModels_LLM")
async def list_models(request: Request, principal: CurrentPrincipal) -> dict[str, Any]:
    return await service.list_models(request.app.state.pipeline, principal, request.headers)


@router.get("/models/{model:path}", operation_id="getModel_LLM")
async def get_model(
    request: Request, principal: CurrentPrincipal, model: Annotated[str, Path(max_length=256)]
) -> dict[str, Any]:
    return await service.get_model(request.app.state.pipeline, principal, request.headers, model)
