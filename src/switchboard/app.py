"""create_app(settings): routers, middleware, error handlers, lifespan. The only wiring."""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard import API_VERSION
from switchboard.auth.authenticator import Authenticator
from switchboard.auth.tokens import TokenCodec
from switchboard.db.engine import make_engine, make_sessionmaker
from switchboard.db.migrate import upgrade
from switchboard.error_shapes import install_error_handlers
from switchboard.idempotency.middleware import IdempotencyMiddleware
from switchboard.idempotency.openapi import declare_idempotency_key
from switchboard.llm import fast_routes
from switchboard.logging_setup import configure_logging
from switchboard.request_context import RequestContextMiddleware
from switchboard.settings import Settings, load_settings

log = logging.getLogger("switchboard.app")

# Domains in start-up order; each may have a `lifecycle` module with startup/shutdown.
DOMAINS = (
    "idempotency",
    "credentials",
    "upstream",
    "catalog",
    "metering",
    "auth",
    "groups",
    "agents",
    "llm",
    "discovery",
)

OPENAPI_TAGS = [
    {"name": "LLM Compatibility", "description": "OpenAI-compatible /v1 surface."},
    {"name": "LLM Credentials", "description": "Write-only provider keys scoped to a user or a room."},
    {"name": "Working Groups", "description": "Rooms and their members."},
    {"name": "Economies & Usage", "description": "Economies, usage records and billing reads."},
    {"name": "Agents", "description": "Agent registry and discovery."},
    {"name": "Auth", "description": "Embedded authentication: API keys, refresh, delegation, login."},
    {"name": "MCP", "description": "OAuth discovery documents and the /mcp challenge."},
    {"name": "Health", "description": "Version, liveness and readiness."},
]


def _lifecycles() -> list[object]:
    found: list[object] = []
    for name in DOMAINS:
        try:
            found.append(importlib.import_module(f"switchboard.{name}.lifecycle"))
        except ModuleNotFoundError as exc:
            if exc.name != f"switchboard.{name}.lifecycle":
                raise
    return found


# /v1 routes are matched first: routing tries routes in order, and they carry the traffic.
ROUTER_ORDER = ("llm", *(name for name in DOMAINS if name != "llm"))


def _routers() -> list[object]:
    found: list[object] = []
    for name in ROUTER_ORDER:
        try:
            module = importlib.import_module(f"switchboard.{name}.router")
        except ModuleNotFoundError as exc:
            if exc.name != f"switchboard.{name}.router":
                raise
            continue
        found.extend(getattr(module, attr) for attr in ("router", "extra_router") if hasattr(module, attr))
    return found


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    engine = make_engine(settings.database_url)
    if settings.migrate_on_start:
        await upgrade(engine)
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    started: list[object] = []
    try:
        for module in _lifecycles():
            await module.startup(app)  # type: ignore[attr-defined]
            started.append(module)
        log.info("switchboard %s ready (database: %s)", API_VERSION, engine.dialect.name)
        yield
    finally:
        for module in reversed(started):
            try:
                await module.shutdown(app)  # type: ignore[attr-defined]
            except Exception:
                log.exception("shutdown of %s failed", getattr(module, "__name__", module))
        await engine.dispose()


class SwitchboardApp(FastAPI):
    """FastAPI, except that POSTs to the model-call routes skip the framework (llm/fast_routes.py)."""

    model_calls: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.model_calls is not None and fast_routes.takes(scope):
            scope["app"] = self
            await self.model_calls(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            # Built once and kept by FastAPI; the header is honoured by middleware, not by any route.
            self.openapi_schema = declare_idempotency_key(super().openapi())
        return self.openapi_schema


def create_app(settings: Settings | None = None, *, fast_model_calls: bool = True) -> FastAPI:
    """`fast_model_calls=False` routes model calls through FastAPI too (tests compare the two)."""
    settings = settings or load_settings()
    configure_logging(settings.log_level, settings.log_format)
    app = SwitchboardApp(
        title="Switchboard",
        version=API_VERSION,
        openapi_tags=OPENAPI_TAGS,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.authenticator = Authenticator(
        TokenCodec(settings.jwt_secret.get_secret_value(), settings.jwt_audience, settings.jwt_leeway_seconds)
    )
    install_error_handlers(app)
    for router in _routers():
        app.include_router(router)  # type: ignore[arg-type]
    # Added first, so it runs inside RequestContextMiddleware (request id, body limit, log line).
    app.add_middleware(IdempotencyMiddleware)
    app.add_middleware(RequestContextMiddleware, max_body_bytes=settings.max_body_bytes)
    if fast_model_calls:
        # The same request context as every other route: request id, body limit, log line, last-resort 500.
        app.model_calls = RequestContextMiddleware(
            fast_routes.endpoint(app.state), max_body_bytes=settings.max_body_bytes
        )
    return app
