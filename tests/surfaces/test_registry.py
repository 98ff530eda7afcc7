"""One registry (surfaces/registry.py) makes both the fast path's handlers and the documented routes."""

from __future__ import annotations

from fastapi.routing import APIRoute

from switchboard.llm import fast_routes, router
from switchboard.surfaces.registry import ROUTES
from switchboard.wire import paths


def test_the_fast_path_takes_every_registered_route_and_no_other() -> None:
    assert list(fast_routes.HANDLERS) == [route.full_path for route in ROUTES]


def test_the_framework_documents_every_registered_route_in_the_registry_order() -> None:
    posts = [
        (route.path, route.operation_id)
        for route in router.router.routes
        if isinstance(route, APIRoute) and "POST" in route.methods
    ]
    assert posts == [(route.full_path, route.operation_id) for route in ROUTES]


def test_each_surface_records_its_own_endpoint() -> None:
    endpoints = [route.codec.endpoint for route in ROUTES if route.codec is not None]
    assert len(endpoints) == len(set(endpoints)) == 5


def test_the_paths_lower_layers_name_are_the_registry_s_and_its_codecs_endpoints() -> None:
    # Access records, error shapes and authentication know the paths from wire/paths.py alone.
    assert {
        route.full_path: route.codec.endpoint if route.codec is not None else "messages.count_tokens"
        for route in ROUTES
    } == paths.ENDPOINTS
    anthropic = [route.full_path for route in ROUTES if paths.on_anthropic_surface(route.full_path)]
    assert anthropic == ["/v1/messages", "/v1/messages/count_tokens"]
    assert not paths.on_anthropic_surface("/v1/messagesx") and not paths.on_v1("/v1x")


def test_a_surface_is_relayed_as_it_came_only_to_the_providers_that_speak_it() -> None:
    speakers = {
        route.path: [
            kind for kind in ("openai", "anthropic", "gemini", "mistral") if route.codec.speaks(kind)
        ]
        for route in ROUTES
        if route.codec is not None
    }
    assert speakers == {
        "/chat/completions": ["openai", "anthropic", "gemini", "mistral"],  # adapted by the upstream client
        "/completions": ["openai"],
        "/responses": ["openai"],
        "/messages": ["anthropic"],
        "/embeddings": ["openai", "anthropic", "gemini", "mistral"],  # litellm beyond openai
    }
