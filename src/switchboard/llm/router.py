"""The /v1 routes: thin adapters from HTTP to the call pipeline. The model-call POSTs are generated
from surfaces/registry.py, as the fast path's are (llm/fast_routes.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from switchboard.auth.dependencies import CurrentPrincipal
from switchboard.auth.principal import Principal
from switchboard.llm import service
from switchboard.llm.fast_routes import HANDLERS
from switchboard.llm.service import Handler
from switchboard.surfaces.registry import PREFIX, ROUTES

router = APIRouter(prefix=PREFIX, tags=["LLM Compatibility"])

# Documented for OpenAPI only: the body is read raw so that unknown fields pass through untouched.
_ANY_JSON_OBJECT = {
    "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}
}


def _documented(handler: Handler) -> Callable[[Request, Principal], Awaitable[Response]]:
    async def model_call(request: Request, principal: CurrentPrincipal) -> Response:
        # POSTs normally take llm/fast_routes.py; these routes document them and serve a mounted app.
        pipeline, headers, path = request.app.state.pipeline, request.headers, request.url.path
        return await handler(
            pipeline, principal, headers, path, service.request_id_of(request), await request.body()
        )

    return model_call


for _route in ROUTES:
    router.add_api_route(
        _route.path,
        _documented(HANDLERS[_route.full_path]),
        methods=["POST"],
        operation_id=_route.operation_id,
        summary=_route.summary,
        description=_route.description,
        response_model=None,
        openapi_extra=_ANY_JSON_OBJECT,
    )


@router.get("/models", operation_id="listModels_LLM")
async def list_models(request: Request, principal: CurrentPrincipal) -> dict[str, Any]:
    return await service.list_models(request.app.state.pipeline, principal, request.headers)


@router.get("/models/{model:path}", operation_id="getModel_LLM")
async def get_model(
    request: Request, principal: CurrentPrincipal, model: Annotated[str, Path(max_length=256)]
) -> dict[str, Any]:
    return await service.get_model(request.app.state.pipeline, principal, request.headers, model)
