"""create_app(settings): routers, middleware, error handlers, lifespan. The only wiring."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard import API_VERSION
from switchboard.auth.authenticator import Authenticator
from switchboard.auth.tokens import TokenCodec
from switchboard.cors import v1_cors
from switchboard.db.engine import make_sessionmaker
from switchboard.db.outage import DatabaseOutage
from switchboard.error_shapes import install_error_handlers
from switchboard.idempotency.middleware import IdempotencyMiddleware
from switchboard.idempotency.openapi import declare_idempotency_key
from switchboard.llm import fast_routes
from switchboard.logging_setup import configure_logging
from switchboard.openapi_errors import declare_errors
from switchboard.request_context import RequestContextMiddleware
from switchboard.settings import Settings, load_settings
from switchboard.startup_errors import open_database

log = logging.getLogger("switchboard.app")

# Domains in start-up order; each may have a `lifecycle` module with startup/shutdown.
DOMAINS = (
    "idempotency",
    "credentials",
    "upstream",
    "catalog",
    "metering",
    "observability",  # after metering: its usage writer feeds the metrics too
    "limits",
    "auth",
    "sso",  # after auth: it plugs the issuer's tokens into the Authenticator
    "groups",
    "agents",
    "llm",
    "discovery",
    "console",  # GET /console: static pages, no lifecycle, nothing on the /v1 path
)

OPENAPI_TAGS = [
    {"name": "LLM Compatibility", "description": "OpenAI-compatible /v1 surface."},
    {"name": "LLM Credentials", "description": "Write-only provider keys scoped to a user or a room."},
    {"name": "Working Groups", "description": "Rooms and their members."},
    {"name": "Economies & Usage", "description": "Economies, usage records and billing reads."},
    {"name": "Limits", "description": "Spend and rate limits: on economies, users, rooms, agents, API keys."},
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
    started: list[object] = []
    try:
        for module in _lifecycles():
            await module.startup(app)  # type: ignore[attr-defined]
            started.append(module)
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
                await module.shutdown(app)  # type: ignore[attr-defined]
            except Exception:
                log.exception("shutdown of %s failed", getattr(module, "__name__", module))
        await engine.dispose()


class SwitchboardApp(FastAPI):
    """FastAPI, except that POSTs to the model-call routes skip the framework (llm/fast_routes.py)."""

    model_calls: ASGIApp | None = None
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
    app.state.authenticator = Authenticator(
        TokenCodec(settings.jwt_secret.get_secret_value(), settings.jwt_audience, settings.jwt_leeway_seconds)
    )
    install_error_handlers(app)
    routers: list[Any] = _routers()
    for router in routers:
        app.include_router(router)
    # For a 405's Allow header (error_shapes.allowed_methods): every route with its path pattern.
    app.state.routes_by_path = [
        route for router in routers for route in router.routes if isinstance(route, APIRoute)
    ]
    # Added first, so it runs inside RequestContextMiddleware (request id, body limit, log line).
    app.add_middleware(IdempotencyMiddleware)
    app.add_middleware(RequestContextMiddleware, max_body_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        app.cors = v1_cors(app._dispatch, settings.cors_origins)
    if fast_model_calls:
        # The same request context as every other route: request id, body limit, log line, last-resort 500.
        app.model_calls = RequestContextMiddleware(
            fast_routes.endpoint(app.state), max_body_bytes=settings.max_body_bytes
        )
    return app
