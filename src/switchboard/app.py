"""create_app(settings): routers, middleware, error handlers, lifespan. The only wiring."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard import API_VERSION
from switchboard.agents import lifecycle as agents_lifecycle
from switchboard.agents import router as agents_router
from switchboard.audit import lifecycle as audit_lifecycle
from switchboard.audit import router as audit_router
from switchboard.auth import lifecycle as auth_lifecycle
from switchboard.auth import router as auth_router
from switchboard.auth.authenticator import Authenticator
from switchboard.auth.tokens import TokenCodec
from switchboard.cache import lifecycle as cache_lifecycle
from switchboard.catalog import lifecycle as catalog_lifecycle
from switchboard.console import router as console_router
from switchboard.cors import v1_cors
from switchboard.credentials import lifecycle as credentials_lifecycle
from switchboard.credentials import providers_route
from switchboard.credentials import router as credentials_router
from switchboard.db.engine import make_sessionmaker
from switchboard.db.outage import DatabaseOutage
from switchboard.discovery import router as discovery_router
from switchboard.error_shapes import install_error_handlers
from switchboard.groups import auth_routes as groups_auth_routes
from switchboard.groups import router as groups_router
from switchboard.idempotency import lifecycle as idempotency_lifecycle
from switchboard.idempotency.middleware import IdempotencyMiddleware
from switchboard.idempotency.openapi import declare_idempotency_key
from switchboard.lifecycle import DomainLifecycle
from switchboard.limits import lifecycle as limits_lifecycle
from switchboard.limits import router as limits_router
from switchboard.limits.budgets import EconomyBudgets
from switchboard.llm import fast_routes
from switchboard.llm import lifecycle as llm_lifecycle
from switchboard.llm import router as llm_router
from switchboard.logging_setup import configure_logging
from switchboard.metering import lifecycle as metering_lifecycle
from switchboard.metering import router as metering_router
from switchboard.observability import lifecycle as observability_lifecycle
from switchboard.observability import router as observability_router
from switchboard.openapi_errors import declare_errors
from switchboard.request_context import RequestContextMiddleware
from switchboard.settings import Settings, load_settings
from switchboard.settlement import lifecycle as settlement_lifecycle
from switchboard.sso import lifecycle as sso_lifecycle
from switchboard.sso import router as sso_router
from switchboard.startup_errors import open_database
from switchboard.upstream import lifecycle as upstream_lifecycle
from switchboard.webhooks import lifecycle as webhooks_lifecycle
from switchboard.webhooks import router as webhooks_router

log = logging.getLogger("switchboard.app")

# Domains in start-up order: what each builds at start (a `lifecycle` module), stopped in reverse.
LIFECYCLES: tuple[DomainLifecycle, ...] = (
    audit_lifecycle,  # first: its flush hook must see the changes every later start-up makes
    idempotency_lifecycle,
    credentials_lifecycle,
    upstream_lifecycle,
    catalog_lifecycle,
    metering_lifecycle,
    settlement_lifecycle,  # the usage writer: after metering (economies) and idempotency (its claims)
    observability_lifecycle,  # after settlement: the usage writer feeds the metrics too
    cache_lifecycle,  # after credentials (its key ring) and observability (its counter)
    limits_lifecycle,
    auth_lifecycle,
    sso_lifecycle,  # after auth: it plugs the issuer's tokens into the Authenticator
    agents_lifecycle,
    webhooks_lifecycle,  # before llm: the pipeline hands its events to the webhooks' hub
    llm_lifecycle,  # last but discovery's none: the pipeline takes what the others built (llm/services.py)
)

# /v1 routes are matched first: routing tries routes in order, and they carry the traffic.
ROUTERS: tuple[APIRouter, ...] = (
    llm_router.router,
    audit_router.router,
    credentials_router.router,
    providers_route.router,  # GET /providers
    metering_router.router,
    metering_router.extra_router,
    observability_router.router,
    limits_router.router,
    auth_router.router,
    sso_router.router,
    groups_router.router,
    groups_auth_routes.router,  # the Auth routes that read rooms (GET /users, delegation)
    agents_router.router,
    webhooks_router.router,
    discovery_router.router,
    discovery_router.extra_router,
    console_router.router,  # GET /console: static pages, nothing on the /v1 path
)

OPENAPI_TAGS = [
    {"name": "LLM Compatibility", "description": "OpenAI-compatible /v1 surface."},
    {"name": "LLM Credentials", "description": "Write-only provider keys scoped to a user or a room."},
    {"name": "Working Groups", "description": "Rooms and their members."},
    {"name": "Economies & Usage", "description": "Economies, usage records and billing reads."},
    {"name": "Limits", "description": "Spend and rate limits: on economies, users, rooms, agents, API keys."},
    {"name": "Agents", "description": "Agent registry and discovery."},
    {"name": "Webhooks", "description": "Signed event deliveries: budgets, refusals, rejected keys, audit."},
    {"name": "Auth", "description": "Embedded authentication: API keys, refresh, delegation, login."},
    {"name": "MCP", "description": "OAuth discovery documents and the /mcp challenge."},
    {"name": "Health", "description": "Version, liveness and readiness."},
    {"name": "Audit", "description": "The append-only, hash-chained audit trail of every change."},
]


def _command() -> str:
    """How to run `switchboard` from here: `.venv/bin/switchboard` after scripts/serve, which puts
    nothing on PATH."""
    installed = Path(sys.executable).with_name("switchboard")
    try:
        return str(installed.relative_to(Path.cwd()))
    except ValueError:
        return "switchboard"


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    engine = await open_database(
        settings.database_url, migrate=settings.migrate_on_start, pool_size=settings.database_pool_size
    )
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    # SQLite is a local file: it does not go away. PostgreSQL is watched (db/outage.py).
    app.state.db_outage = DatabaseOutage(engine, enabled=engine.dialect.name == "postgresql")
    started: list[DomainLifecycle] = []
    try:
        for module in LIFECYCLES:
            await module.startup(app)
            started.append(module)
        if isinstance(app, SwitchboardApp) and app.fast_model_calls:
            # The same request context as every other route: request id, body limit, log line,
            # last-resort 500.
            pipeline = app.state.pipeline
            app.model_calls = RequestContextMiddleware(
                fast_routes.endpoint(pipeline), max_body_bytes=settings.max_body_bytes
            )
        app.state.db_outage.start()
        where = f" on {settings.listen_url}" if settings.listen_url else ""
        log.info("switchboard %s ready (database: %s)%s", API_VERSION, engine.dialect.name, where)
        if settings.listen_url:
            command = _command()
            log.info(
                "console: %s/console; next: in another terminal in this directory, "
                "`%s user create --email you@example.com`, then "
                "`%s key create --email you@example.com` for an API key (README: Quick start)",
                settings.listen_url,
                command,
                command,
            )
        yield
    finally:
        await app.state.db_outage.stop()
        for module in reversed(started):
            try:
                await module.shutdown(app)
            except Exception:
                log.exception("shutdown of %s failed", getattr(module, "__name__", module))
        await engine.dispose()


class SwitchboardApp(FastAPI):
    """FastAPI, except that POSTs to the model-call routes skip the framework (llm/fast_routes.py)."""

    fast_model_calls = True
    model_calls: ASGIApp | None = None  # set in the lifespan, once the pipeline is built
    cors: ASGIApp | None = None  # /v1 behind CORS, when SWITCHBOARD_CORS_ORIGINS names origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if path[-1:] == "/" and path.startswith("/v1/"):
            # Served as without the slash: a redirect would cost a round trip, and its absolute
            # Location would name http:// behind a TLS-terminating proxy.
            scope = dict(scope, path=path.rstrip("/"), raw_path=path.rstrip("/").encode())
        if self.cors is not None and scope["type"] == "http" and path.startswith("/v1/"):
            await self.cors(scope, receive, send)
            return
        await self._dispatch(scope, receive, send)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.model_calls is not None and fast_routes.takes(scope):
            scope["app"] = self
            await self.model_calls(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            # Built once and kept by FastAPI; the header is honoured by middleware, not by any route.
            self.openapi_schema = declare_errors(declare_idempotency_key(super().openapi()))
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
        docs_url=None,  # console/router.py serves /docs from shipped files, not FastAPI's CDN page
        redoc_url=None,
    )
    app.state.settings = settings
    # Metering's economy changes keep each budget's limit through it (metering.economies.BudgetLimits).
    app.state.economy_budgets = EconomyBudgets(app.state)
    app.state.authenticator = Authenticator(
        TokenCodec(settings.jwt_secret.get_secret_value(), settings.jwt_audience, settings.jwt_leeway_seconds)
    )
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    # For a 405's Allow header (error_shapes.allowed_methods): every route with its path pattern.
    app.state.routes_by_path = [
        route for router in ROUTERS for route in router.routes if isinstance(route, APIRoute)
    ]
    # Added first, so it runs inside RequestContextMiddleware (request id, body limit, log line).
    app.add_middleware(IdempotencyMiddleware)
    app.add_middleware(RequestContextMiddleware, max_body_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        app.cors = v1_cors(app._dispatch, settings.cors_origins)
    app.fast_model_calls = fast_model_calls
    return app
